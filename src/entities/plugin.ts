// The generic entity API (subsystem `metadata`): the CRUD, nested and introspection routes of
// every table of the registry, generated from it, all through the entity store's row scoping.

import { PASSWORD_HASHER } from '../auth/api.js';
import { definePlugin } from '../host/plugin.js';
import { entityRoutes } from './routes.js';

export const entitiesPlugin = definePlugin({
  name: 'metadata',
  needs: { passwords: PASSWORD_HASHER },
  create({ meta, needs }) {
    return { routes: entityRoutes(meta.entities, needs.passwords) };
  },
});
