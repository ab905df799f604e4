// Stuck holders (stuck-contract.ts) against a 3-member tenure cluster (needs an up-to-date
// dist/: `npx tsc -p tsconfig.json`, since bin/tenure runs from there).
import { stuckContract } from './stuck-contract.js';

stuckContract('tenure');
