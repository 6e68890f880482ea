/**
 * `--tools <module>`: a module exporting `tools` (or a default export) as an array of tools made with `defineTool`.
 * A TypeScript module is compiled on load by tsx, found next to the module (the user's project) or next to this
 * package; without it, a clear error instead of what plain `require` made of the types ("string is not defined").
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { Tool } from '../tools/tool';
import type { AgentDefinition } from '../activities/agents';
import { CliError } from './errors';

const TYPESCRIPT = /\.[cm]?tsx?$/;

/** Has something (tsx in a checkout's `bin`, `node --import tsx`) taught `require` TypeScript already? */
const requireKnowsTypeScript = () => require.extensions['.ts'] !== undefined;

/** The path of tsx's CommonJS register API, from the module's folder first, else from this package. */
function tsxApi(file: string): string | undefined {
  for (const from of [createRequire(file), require]) {
    try {
      return from.resolve('tsx/cjs/api');
    } catch {
      // not installed there
    }
  }
  return undefined;
}

function registerTypeScript(path: string, file: string): void {
  const api = tsxApi(file);
  if (!api)
    throw new CliError(
      `${path} is TypeScript: install tsx where it is (npm install --save-dev tsx), or give the compiled .js module`,
    );
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require(api) as { register(): unknown }).register();
}

/** A user's module (`--tools`, `eval --scorers`): JavaScript, or TypeScript compiled on load (see above). */
export function loadUserModule(path: string): Record<string, unknown> {
  const file = resolve(path);
  if (TYPESCRIPT.test(file) && !requireKnowsTypeScript()) registerTypeScript(path, file);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(file) as Record<string, unknown>;
}

export function loadTools(path: string | undefined): Tool[] | undefined {
  if (path === undefined) return undefined;
  const mod = loadUserModule(path);
  // A module of agents alone (issue 40) brings no tools of the default agent.
  if (mod.tools === undefined && mod.default === undefined && Array.isArray(mod.agents)) return [];
  const tools = mod.tools ?? mod.default;
  if (!Array.isArray(tools))
    throw new CliError(`${path} must export \`tools\`: an array of tools made with defineTool`);
  return tools as Tool[];
}

/**
 * The `--tools` module's `agents` (issue 40): an array of definitions made with `defineAgent`, hosted beside the
 * default agent (the module's `tools` and the command's model). None when it exports none.
 */
export function loadAgents(path: string | undefined): AgentDefinition[] | undefined {
  if (path === undefined) return undefined;
  const agents = loadUserModule(path).agents;
  if (agents === undefined) return undefined;
  if (!Array.isArray(agents) || agents.some((a) => typeof (a as AgentDefinition)?.hash !== 'string'))
    throw new CliError(`${path}: \`agents\` must be an array of agents made with defineAgent`);
  return agents as AgentDefinition[];
}

/** What `dev` and `worker` print at start: the tools' names. */
export const toolNames = (tools: readonly Tool[]): string => tools.map((t) => t.name).join(', ') || '(none)';
