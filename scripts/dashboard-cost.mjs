#!/usr/bin/env node
// What one open dashboard costs the leader: `npm run build`, then
//   node scripts/dashboard-cost.mjs [--phase-ms 15000] [--rounds 2] [--paced 500] [--json]
// Starts a local 3-member cluster, runs the bench's put load with and without one emulated
// dashboard on the leader (its event stream and a state fetch every 5 s), and prints the
// leader's CPU % of one core for each (src/bench/dashboard-cost.ts). Not part of npm test.
import { parseArgs } from 'node:util';
import {
  dashboardCostTable,
  DASHBOARD_COST_DEFAULTS,
  measureDashboardCost,
} from '../dist/src/bench/dashboard-cost.js';

const { values } = parseArgs({
  options: {
    'phase-ms': { type: 'string' },
    rounds: { type: 'string' },
    paced: { type: 'string' },
    json: { type: 'boolean' },
  },
});
const number = (v, d) => (v === undefined ? d : Number(v));
const options = {
  phaseMs: number(values['phase-ms'], DASHBOARD_COST_DEFAULTS.phaseMs),
  rounds: number(values.rounds, DASHBOARD_COST_DEFAULTS.rounds),
  pacedPutsPerSec: number(values.paced, DASHBOARD_COST_DEFAULTS.pacedPutsPerSec),
};
const cost = await measureDashboardCost(options);
if (values.json) process.stdout.write(`${JSON.stringify(cost, null, 2)}\n`);
else process.stdout.write(`${dashboardCostTable(cost, options.pacedPutsPerSec)}\n`);
