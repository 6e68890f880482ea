/**
 * A stdio MCP server (official SDK) whose one tool, `env`, answers with the process's whole environment as JSON: what
 * the runtime handed the child process it started.
 */
import process from 'node:process';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'env-probe', version: '1.0.0' });
server.registerTool('env', { description: 'Reports its environment variables' }, async () => ({
  content: [{ type: 'text', text: JSON.stringify(process.env) }],
}));
await server.connect(new StdioServerTransport());
