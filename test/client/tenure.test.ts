// The SDK contract suite (contract.ts) against a 3-member tenure cluster (needs an up-to-date
// dist/: `npx tsc -p tsconfig.json`, since bin/tenure runs from there).
import { clientContract } from './contract.js';

clientContract('tenure');
