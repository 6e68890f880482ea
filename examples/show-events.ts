/** Prints a thread's live events as a readable transcript (shared by the examples). */
import type { ThreadEvent } from '../src';

export function show(e: ThreadEvent): void {
  switch (e.type) {
    case 'text_delta':
      process.stdout.write(e.text);
      return;
    case 'completion_started':
      process.stdout.write('\n\x1b[2m[agent]\x1b[0m ');
      return;
    case 'completion_finished':
      process.stdout.write('\n');
      return;
    case 'tool_call':
      console.log(`\n\x1b[36m→ ${e.name}(${JSON.stringify(e.args)})\x1b[0m`);
      return;
    case 'tool_result':
      console.log(`\x1b[32m← ${e.text}\x1b[0m`);
      return;
    case 'user_input':
      console.log(`\x1b[1m[user]\x1b[0m ${e.text}`);
      return;
    case 'status':
      console.log(`\x1b[2m(status: ${e.status})\x1b[0m`);
      return;
    case 'info':
      console.log(`\x1b[33m${e.text}\x1b[0m`);
      return;
    default:
      return;
  }
}
