// Paths of the repository the tests run from (the launcher's package root, found from the
// compiled file, so it holds in dist/ as in an installed package).
export { packageRoot as repoRoot, tenureBin } from '../../src/launcher/member-command.js';
