/**
 * The scenarios' tools, the same in the test's worker and in the `dev` process (`dev-tools.ts`): `emit` answers its
 * call through `ctx.send` (the "signal" delivery of a tool result), `wait` leaves its call for the test to answer by
 * another delivery, `watch` starts a subscription and, with `emit`, sends one associative event through `ctx.send`.
 */
import { subscriptionEvent, subscriptionStart, toolResult } from '../../src/tools/messages';
import { defineTool, type Tool } from '../../src/tools/tool';
import { bodyText, toolContent } from './content';

export function guaranteeTools(): Tool[] {
  return [
    defineTool<{ bytes: number }>({
      name: 'emit',
      description: 'answers with content of the given size',
      parameters: { type: 'object', properties: { bytes: { type: 'number' } }, required: ['bytes'] },
      async execute(args, ctx) {
        await ctx.send(toolResult(ctx, toolContent(args.bytes)));
      },
    }),
    defineTool({
      name: 'wait',
      description: 'answered by the test',
      parameters: { type: 'object' },
      execute() {},
    }),
    defineTool<{ bytes?: number; emit?: boolean }>({
      name: 'watch',
      description: 'subscribes; with emit, sends one event of the given size',
      parameters: { type: 'object', properties: { bytes: { type: 'number' }, emit: { type: 'boolean' } } },
      async execute(args, ctx) {
        await ctx.send(subscriptionStart(ctx, 'watching'));
        if (args.emit) await ctx.send(subscriptionEvent(ctx, bodyText(args.bytes ?? 1), { associative: true }));
      },
    }),
  ];
}
