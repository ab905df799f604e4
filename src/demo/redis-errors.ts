// The Redlock demo's own error: something it needs is not on this machine (a Debian package, an
// npm devDependency, a compiler). The CLI prints the message as it is, without a stack.
export class DemoSetupError extends Error {
  override readonly name = 'DemoSetupError';
  readonly code = 'DEMO_SETUP';
}
