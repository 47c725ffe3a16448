// Alarm rules made from metadata, as entity hooks: a tagmeta row with limits and a dataTagId makes
// one rule (in the collection the tag-to-scope map names); changing the limits updates it,
// deleting the row deletes it. An update of a unit that sets limits and a dataTagId does the
// same for that unit's collections. Inside the entity write's transaction; the scheduler is
// rebuilt for the collections touched once it commits.

import type { Entity, EntityHooks } from '../meta/entities.js';
import type { AlarmTables } from '../meta/tables/alarms.js';
import type { Collections } from '../storage/api.js';
import { numberOrNull, ruleOfRow } from './alarm-rules.js';
import type { TickScheduler } from './scheduler.js';
import type { MonitorService } from './service.js';

export function derivedRuleHooks(monitor: MonitorService, tables: AlarmTables, collections: Collections, scheduler: TickScheduler, now: () => number): EntityHooks {
  const upsert = (origin: 'tagmeta' | 'units', tagmetaId: string | null, collectionId: string, tag: string, limits: { limHi: number | null; limLo: number | null }, name: string, existing: Array<Record<string, unknown>>): void => {
    if (existing.length > 0) {
      const rule = ruleOfRow(existing[0]);
      if (rule.collection_id === collectionId && rule.tag === tag) {
        tables.updateLimits(rule.id, limits.limHi, limits.limLo, now());
        monitor.dirty.add(collectionId);
        return;
      }
      monitor.removeRules(existing.map(ruleOfRow));
    }
    monitor.insertRule({ collection_id: collectionId, tag, name, enabled: true, ...limits, deadband: 0, on_delay_ms: 0, off_delay_ms: 0, stale_after_ms: null, severity: 'warn', notify: true }, tagmetaId, origin);
  };

  const followTagmeta = (entity: Entity): void => {
    const id = String(entity.id);
    const existing = tables.rulesOfTagmeta(id);
    const collectionId = typeof entity.dataTagId === 'string' ? collections.collectionOfTag(entity.dataTagId) : null;
    if (!hasLimits(entity) || !collectionId) {
      if (existing.length > 0) monitor.removeRules(existing.map(ruleOfRow));
      return;
    }
    const limits = { limHi: numberOrNull(entity.limHi), limLo: numberOrNull(entity.limLo) };
    if (limits.limHi !== null && limits.limLo !== null && limits.limLo >= limits.limHi) return; // not a rule anyone could mean
    const name = typeof entity.tagName === 'string' ? entity.tagName : '';
    upsert('tagmeta', id, collectionId, entity.dataTagId as string, limits, name, existing);
  };

  const followUnit = (unit: Entity): void => {
    const limits = { limHi: numberOrNull(unit.limHi), limLo: numberOrNull(unit.limLo) };
    if (limits.limHi !== null && limits.limLo !== null && limits.limLo >= limits.limHi) return;
    for (const collectionId of collections.collectionsOfUnit(Number(unit.id))) {
      upsert('units', null, collectionId, unit.dataTagId as string, limits, '', tables.rulesOfUnit(collectionId, unit.dataTagId as string));
    }
  };

  return {
    afterCreate: (def, entity) => {
      if (def.table === 'tagmeta') followTagmeta(entity);
    },
    afterUpdate: (def, before, after) => {
      if (def.table === 'tagmeta') followTagmeta(after);
      if (def.table === 'units' && hasLimits(after) && typeof after.dataTagId === 'string' && limitsChanged(before, after)) followUnit(after);
    },
    beforeDelete: (def, entity) => {
      if (def.table !== 'tagmeta') return;
      const rows = tables.rulesOfTagmeta(String(entity.id));
      if (rows.length > 0) monitor.removeRules(rows.map(ruleOfRow));
    },
    afterRollback: () => monitor.dirty.clear(),
    afterCommit: () => {
      if (monitor.dirty.size === 0) return;
      const ids = [...monitor.dirty];
      monitor.dirty.clear();
      scheduler.rebuild(ids);
    },
  };
}

function hasLimits(entity: Entity): boolean {
  return numberOrNull(entity.limHi) !== null || numberOrNull(entity.limLo) !== null;
}

function limitsChanged(before: Entity, after: Entity): boolean {
  return before.limHi !== after.limHi || before.limLo !== after.limLo || before.dataTagId !== after.dataTagId;
}
