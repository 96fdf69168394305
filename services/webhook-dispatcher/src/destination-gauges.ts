import type { Registry } from 'prom-client';
import { registerScrapedGauge, type Logger } from '@media/common';
import { conditionOf, type DestinationStatus } from '@media/domain';
import type { DestinationGate } from '@media/storage';

/** Destinations named in labels, the busiest first; the rest are summed as `other`, so a deployment with a million receivers still exports a handful of series. */
export const LABELLED_DESTINATIONS = 10;

/**
 * Per-destination gauges, read from Redis at scrape time, over every dispatcher (so any replica's
 * scrape tells the whole story; dashboards take one replica's value, not the sum):
 * - `media_callback_destination_attempts{destination, state}`: attempts `in_flight` and `deferred`
 *   of the busiest destinations by origin, and of all others as `destination="other"`;
 * - `media_callback_destinations{state}`: how many destinations are `saturated` (no free slot, or
 *   attempts waiting for one), `slow` (in the slow lane) or `throttled` (they pushed back).
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
        [{ state: 'saturated' }, all.filter((d) => conditionOf(d) === 'saturated').length],
        [{ state: 'slow' }, all.filter((d) => d.slowUntilMs !== null).length],
        [{ state: 'throttled' }, all.filter((d) => d.throttledUntilMs !== null).length],
      ];
    },
    logger,
  );
}
