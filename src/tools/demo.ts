/** The demo's CI tool: `get_build_status` answers 2 s later through the input queue, as a slow CI system would. */
import { toolResult } from './messages';
import { defineTool, type Tool } from './tool';

/** Options of {@link buildStatusDemoTool}. */
export interface BuildStatusDemoOptions {
  /**
   * `false`: the tool answers nothing and its calls stay pending, to be answered by hand (`infinity-temporal
   * deliver`, a `tool_result` signal from the `temporal` CLI), as `infinity-temporal dev --answer-by-hand` does.
   * @default true
   */
  answers?: boolean;
}

export function buildStatusDemoTool(delayMs = 2000, options: BuildStatusDemoOptions = {}): Tool {
  const answers = options.answers ?? true;
  return defineTool<{ build_id: string }>({
    name: 'get_build_status',
    description: 'Look up the status of a CI build by its id. The result arrives later.',
    parameters: {
      type: 'object',
      properties: { build_id: { type: 'string' } },
      required: ['build_id'],
      additionalProperties: false,
    },
    execute(args, ctx) {
      // Start the work and return at once: the slice ends, the result arrives later as a signal.
      if (!answers) return;
      const status = args.build_id === '42' ? 'green (all 318 tests passed)' : 'unknown build';
      setTimeout(() => void ctx.send(toolResult(ctx, `Build ${args.build_id}: ${status}`)), delayMs);
    },
  });
}
