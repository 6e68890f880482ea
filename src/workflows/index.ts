/** Workflow entry point bundled by the worker. Only workflow functions may be exported from here. */
export { agentThread } from './thread';
