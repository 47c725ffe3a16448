// The operator console (subsystem `console`): the browser app built from ui/ into
// dist/ui-assets, served at /ui/. It holds no data and calls the same routes any client does,
// with the signed-in user's token. Not built: its routes answer 501 saying how to build it.

import { fileURLToPath } from 'node:url';
import { definePlugin } from '../host/plugin.js';
import { loadAssets, type Asset } from './assets.js';
import { consoleRoutes } from './routes.js';

/** Where ui/build.ts writes (dist/ui-assets, from dist/src/console/). */
const ASSETS_DIR = fileURLToPath(new URL('../../ui-assets', import.meta.url));

export const consolePlugin = definePlugin({
  name: 'console',
  create() {
    let assets: ReadonlyMap<string, Asset> = new Map();
    return {
      routes: consoleRoutes(() => assets),
      start: () => { assets = loadAssets(ASSETS_DIR); },
      health: () => ({ status: 'ok' as const }),
    };
  },
});
