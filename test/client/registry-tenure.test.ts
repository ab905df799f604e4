// The registry suite (registry-contract.ts) against a 3-member tenure cluster (needs an
// up-to-date dist/: `npx tsc -p tsconfig.json`, since bin/tenure runs from there).
import { registryContract } from './registry-contract.js';

registryContract('tenure');
