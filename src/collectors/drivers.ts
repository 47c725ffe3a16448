// The kinds of collector this build has: one line per driver.

import type { CollectorDriver } from './driver.js';

export const DRIVERS: ReadonlyMap<string, CollectorDriver> = new Map<string, CollectorDriver>([]);
