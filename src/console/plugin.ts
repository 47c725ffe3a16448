// The operator console (subsystem `console`): the browser app built from ui/ into
// dist/ui-assets, served at /ui/. It holds no data and calls the same routes any client does,
// with the signed-in user's token. Not built: its start fails, and the host has its routes
// answer 501 naming the subsystem and saying how to build it.

import { fileURLToPath } from 'node:url';
import { definePlugin, type Plugin } from '../host/plugin.js';
import { loadAssets, type Asset } from './assets.js';
import { consoleRoutes } from './routes.js';

/** Where ui/build.ts writes (dist/ui-assets, from dist/src/console/). */
export const ASSETS_DIR = fileURLToPath(new URL('../../ui-assets', import.meta.url));

/** The console serving the files of `assetsDir` (tests name another folder; the service, ASSETS_DIR). */
export function consolePluginFor(assetsDir: string): Plugin<undefined, {}> {
  return definePlugin({
    name: 'console',
    create() {
      let assets: ReadonlyMap<string, Asset> = new Map();
      return {
        routes: consoleRoutes(() => assets),
        start: () => { assets = loadAssets(assetsDir); },
        health: () => ({ status: 'ok' as const }),
      };
    },
  });
}

export const consolePlugin = consolePluginFor(ASSETS_DIR);
