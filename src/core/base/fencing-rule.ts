// The one rule of fencing tokens, shared by the SDK (src/client, `tokenAdmits`) and the fence
// adapters (src/fence, `admits`): a token is admitted if nothing higher was accepted before it.
// Tokens are create revisions, so a later holder of a name always carries a larger one.

/** Whether a resource whose highest accepted token is `highWaterMark` admits `token`. */
export function admits(highWaterMark: bigint | undefined, token: bigint): boolean {
  return highWaterMark === undefined || token >= highWaterMark;
}
