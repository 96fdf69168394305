import type { Registry } from 'prom-client';
import { registerScrapedGauge, type Logger } from '@media/common';
import { type DestinationGate, type DestinationStatus, HOLD_REASONS } from '@media/callbacks';

/** Destinations named in labels, the busiest first; the rest are summed as `other`, so a deployment with a million receivers still exports a handful of series. */
export const LABELLED_DESTINATIONS = 10;

/**
 * Per-destination gauges, read from Redis at scrape time, over every dispatcher (so any replica's
 * scrape tells the whole story; dashboards take one replica's value, not the sum):
 * - `media_callback_destination_attempts{destination, state}`: attempts `in_flight` and `deferred`
 *   of the busiest destinations by origin, and of all others as `destination="other"`;
 * - `media_callback_destinations{state}`: how many destinations are `saturated` (no free slot, or
 *   attempts waiting for one), `slow` (the whole host in the slow lane) or `throttled` (they pushed back);
 * - `media_callback_destination_held_back{reason}`: workspaces with attempts waiting at a destination,
 *   summed over destinations, by why they wait (`own_slowness`, `host_back_pressure`, `host_slow`,
 *   `host_busy`): whether late callbacks are their senders' own doing or the host's;
 * - `media_callback_destination_slow_workspaces`: workspaces in a slow lane of their own at a
 *   destination, summed over destinations.
 * No series names a workspace: a deployment has too many, and a workspace sees its own on its dashboard.
 */
export function registerDestinationGauges(registry: Registry, gate: Pick<DestinationGate, 'recent'>, logger: Logger): void {
  let reading: Promise<DestinationStatus[]> | undefined;
  // Both gauges are collected in one scrape; they share one read.
  const read = () => {
    reading ??= gate.recent(Date.now()).finally(() => setImmediate(() => (reading = undefined)));
    return reading;
  };
  registerScrapedGauge(
    registry,
    {
      name: 'media_callback_destination_attempts',
      help: `Callback attempts in flight and deferred (waiting for a slot), per destination origin: the ${LABELLED_DESTINATIONS} busiest by name, the rest as "other". Deployment-wide.`,
      labelNames: ['destination', 'state'],
    },
    async () => {
      const busiest = [...(await read())].sort((x, y) => y.deferred + y.inFlight - (x.deferred + x.inFlight));
      const named = busiest.slice(0, LABELLED_DESTINATIONS);
      const rest = busiest.slice(LABELLED_DESTINATIONS);
      const rows: Array<[{ destination: string; state: string }, number]> = [];
      for (const d of named) rows.push([{ destination: d.origin, state: 'in_flight' }, d.inFlight], [{ destination: d.origin, state: 'deferred' }, d.deferred]);
      const sum = (pick: (d: DestinationStatus) => number) => rest.reduce((total, d) => total + pick(d), 0);
      rows.push([{ destination: 'other', state: 'in_flight' }, sum((d) => d.inFlight)], [{ destination: 'other', state: 'deferred' }, sum((d) => d.deferred)]);
      return rows;
    },
    logger,
  );
  registerScrapedGauge(
    registry,
    {
      name: 'media_callback_destinations',
      help: 'Destinations with activity in the last 15 minutes that are saturated (no free slot, or attempts waiting), in the slow lane, or throttled after pushing back. Deployment-wide.',
      labelNames: ['state'],
    },
    async () => {
      const all = await read();
      return [
        [{ state: 'saturated' }, all.filter((d) => d.deferred > 0 || d.inFlight >= d.limit).length],
        [{ state: 'slow' }, all.filter((d) => d.slowUntilMs !== null).length],
        [{ state: 'throttled' }, all.filter((d) => d.throttledUntilMs !== null).length],
      ];
    },
    logger,
  );
  registerScrapedGauge(
    registry,
    {
      name: 'media_callback_destination_held_back',
      help: 'Workspaces with callback attempts waiting for a slot at a destination, summed over destinations, by why: own_slowness (their own attempts there were slow), host_back_pressure (the host pushed back), host_slow (the host is slow for everyone), host_busy (every slot they may use is taken). Deployment-wide.',
      labelNames: ['reason'],
    },
    async () => {
      const all = await read();
      return HOLD_REASONS.map((reason) => [{ reason }, all.reduce((total, d) => total + d.heldBack[reason], 0)] as [{ reason: string }, number]);
    },
    logger,
  );
  registerScrapedGauge(
    registry,
    {
      name: 'media_callback_destination_slow_workspaces',
      help: 'Workspaces in a slow lane of their own at a destination (their attempts there timed out or answered late in the last minute), summed over destinations. Deployment-wide.',
      labelNames: [],
    },
    async () => [[{}, (await read()).reduce((total, d) => total + d.slowWorkspaces, 0)]],
    logger,
  );
}
