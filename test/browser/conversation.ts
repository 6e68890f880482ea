/**
 * The conversation the browser check shows in the Temporal UI: a build question answered through a tool, then a
 * child spawned to collect flaky tests, which reports back. Scripted, so every text the check looks for is known.
 */
import { firstText } from '../../src/model/projection';
import { ScriptedModel } from '../../src/model/scripted';

export const QUESTION = 'Is build 42 green?\nPlease check.';
export const REPLY = 'Build 42 is green.\nAll 318 tests passed, none of them flaky.';
export const TASK = 'Collect the flaky tests of build 42\nand report them back';
export const REPORT = 'No flaky tests in build 42.';

export function conversationModel(): ScriptedModel {
  return new ScriptedModel((req) => {
    const self = /Your current thread ID is `([^`]+)`/.exec(req.system)?.[1] ?? '';
    const child = !req.system.includes(`The root thread ID is \`${self}\``);
    const last = req.messages[req.messages.length - 1]!;
    if (child) {
      if (last.role === 'tool_result' && last.name === 'spawn_thread')
        return { toolCall: { name: 'report_to_parent', args: { report: REPORT } } };
      return { text: 'Reported.' };
    }
    if (last.role === 'user' && last.text.startsWith('Is build'))
      return { toolCall: { name: 'get_build_status', args: { build_id: '42' } } };
    if (last.role === 'user' && last.text.startsWith('Find'))
      return { toolCall: { name: 'spawn_thread', args: { instructions: TASK, child_of: [self] } } };
    if (last.role === 'tool_result' && last.name === 'get_build_status') return { text: REPLY };
    if (last.role === 'tool_result' && last.name === 'spawn_thread') return { text: 'A helper is collecting them.' };
    if (last.role === 'tool_result')
      return { text: `The helper says: ${firstText(last.content).replace(/^Report from child thread: /, '')}` };
    return { text: 'Hello.' };
  });
}
