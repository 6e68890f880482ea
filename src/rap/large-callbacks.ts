/**
 * Large callbacks at the RAP gateway. A tool's output of any size up to the delivery limit (32 MiB by default) reaches
 * its thread, staged by the delivering client. Past that limit the call still gets an answer: an error result the model
 * reads (the size, the limit, and how the output began when its body was read), and the tool hears 413. Answering matters because the original
 * runtime's tool servers ignore HTTP status: a bare refusal would leave the call pending for good.
 *
 * Bodies are read only once their token verifies, so a forged URL never makes the gateway buffer a large body.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { DeliveryResult } from '../inbox/deliver';
import { PayloadTooLargeError } from '../inbox/errors';
import { DEFAULT_MAX_STAGED_INPUT_BYTES } from '../inbox/staging';
import { resultInput } from '../core/inputs';
import { oversizeInput } from '../core/staged';
import type { InputMessage } from '../core/types';
import type { TokenCheck, TokenClaims } from './tokens';

/**
 * Default largest callback body: the delivery limit of a client that stages into a store
 * ({@link DEFAULT_MAX_STAGED_INPUT_BYTES}), so the gateway never buffers more than it could deliver. A body past it is
 * not read; its call is answered with an error result that gives the size (and not the output's beginning).
 */
export const DEFAULT_CALLBACK_BODY_LIMIT = DEFAULT_MAX_STAGED_INPUT_BYTES;

export type CallbackDelivery = { result: DeliveryResult; tooLarge?: PayloadTooLargeError };

/** Delivers a callback's input; one over the limit is replaced by an error result for the same call. */
export async function deliverCallback(
  deliver: (m: InputMessage) => Promise<DeliveryResult>,
  input: InputMessage,
): Promise<CallbackDelivery> {
  try {
    return { result: await deliver(input) };
  } catch (e) {
    const answer = e instanceof PayloadTooLargeError ? oversizeInput(input, e.bytes, e.limit) : undefined;
    if (!answer) throw e;
    return { result: await deliver(answer), tooLarge: e as PayloadTooLargeError };
  }
}

export const answeredTooLarge = (e: PayloadTooLargeError) =>
  `${e.message}; the call was answered with an error result that says so`;

export interface CallbackBodyOptions {
  limit: number;
  verify(token: string): TokenCheck;
  /** Answers the token's call for a body over the limit, which was never read; resolves whether it did. */
  answerUnread(claims: TokenClaims, answer: InputMessage): Promise<boolean>;
  /** The dedup id of the call's result (as the gateway names it). */
  resultId(callId: string): string;
}

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

/** Route options of the callback route: its body limit, the token check before the body, and 413 answers. */
export function callbackBodyOptions(o: CallbackBodyOptions) {
  return {
    bodyLimit: o.limit,
    onRequest: async (req: TokenRequest, reply: FastifyReply) => {
      const check = o.verify(req.params.token);
      if (!check.ok) return reply.code(401).send({ error: `callback token refused: ${check.reason}` });
    },
    errorHandler: async (error: FastifyError, req: TokenRequest, reply: FastifyReply) => {
      const check = o.verify(req.params.token);
      if (error.code !== 'FST_ERR_CTP_BODY_TOO_LARGE' || !check.ok) {
        const status = error.statusCode ?? 500;
        // The framework's refusals (bad JSON, 415) say what was wrong with the request; a failure inside (a store or
        // Temporal that cannot be reached) is no business of the caller's, and its message may name internal hosts.
        if (status < 500) return reply.code(status).send({ error: error.message });
        return reply.code(status).send({ error: 'the gateway failed to deliver this callback; try again' });
      }
      const length = Number(req.headers['content-length']);
      const size = Number.isSafeInteger(length) && length > o.limit ? `${length} bytes` : `more than ${o.limit} bytes`;
      const { threadId, callId } = check.claims;
      const text = `Error: the tool's output was not delivered: its callback of ${size} is over the gateway's limit of ${o.limit} bytes, so it was not read.`;
      const answer = resultInput(threadId, callId, text, o.resultId(callId));
      const answered = await o.answerUnread(check.claims, answer).catch(() => false);
      const tail = answered ? '; the call was answered with an error result that says so' : '';
      return reply.code(413).send({ error: `callback body over ${o.limit} bytes was not read${tail}` });
    },
  };
}
