/** `infinity-temporal dev --tools` module of the guarantee suite's `dev` cells. */
import { guaranteeTools } from './tools';

export const tools = guaranteeTools();
