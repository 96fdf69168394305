import * as Gateway from '@media/callbacks';
import { EVENT_TYPES as DOMAIN_EVENT_TYPES } from '@media/domain';
import { Forwarder } from '../../tools/cli/src/forwarder';
import * as Cli from '../../tools/cli/src/protocol';
import { EVENT_TYPES, LISTEN_PATH } from '../../tools/cli/src/settings';
import { closedPort, LocalHandler } from '../../tools/cli/src/test-support/local-handler';

// The CLI keeps its own copy of the relay's wire contract (it is installed without the service's
// packages); this holds it to the gateway's, libs/callbacks/src/relay-protocol.ts. The type checks
// are compile-time (`npm run typecheck`); the rest runs.

/** True when A and B have the same property names. */
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
/** Compiles only when its argument is `true`. */
function holds<T extends true>(_check: T): void {}

// What the gateway sends, the CLI reads; what the CLI sends, the gateway reads; and no field is on one side only.
holds<SameKeys<Gateway.ReadyFrame, Cli.ReadyFrame>>(true);
holds<SameKeys<Gateway.DeliveryFrame, Cli.DeliveryFrame>>(true);
holds<SameKeys<Gateway.ResultFrame, Cli.ResultFrame>>(true);
holds<SameKeys<Gateway.ResultFrame['timing'], Cli.ResultFrame['timing']>>(true);
const gatewayReady = (frame: Gateway.ReadyFrame): Cli.ReadyFrame => frame;
const gatewayDelivery = (frame: Gateway.DeliveryFrame): Cli.DeliveryFrame => frame;
const cliResult = (frame: Cli.ResultFrame): Gateway.ResultFrame => frame;
const forwardErrors = (error: Cli.ForwardError): Gateway.ForwardError => error;
const gatewayErrors = (error: Gateway.ForwardError): Cli.ForwardError => error;
void [gatewayReady, gatewayDelivery, cliResult, forwardErrors, gatewayErrors];

it('has the gateway’s close codes, path and event types', () => {
  expect([Cli.CLOSE_KEY_REVOKED, Cli.CLOSE_TOO_MANY_LISTENERS]).toEqual([Gateway.CLOSE_KEY_REVOKED, Gateway.CLOSE_TOO_MANY_LISTENERS]);
  expect(LISTEN_PATH).toBe(Gateway.RELAY_LISTEN_PATH);
  expect(EVENT_TYPES).toEqual(DOMAIN_EVENT_TYPES);
});

describe('the result frames the forwarder makes', () => {
  let handler: LocalHandler;
  beforeAll(async () => (handler = await LocalHandler.start()));
  afterAll(() => handler.stop());

  const delivery = { id: 'dlv_1', headers: { 'content-type': 'application/json' }, body: '{}', timeout_ms: 2_000 };

  it('come through the gateway’s parser unchanged, answered or not', async () => {
    handler.behaviour = (_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('é'.repeat(2_000));
    const answered = await new Forwarder(handler.url()).forward(delivery);
    const refused = await new Forwarder(new URL(`http://127.0.0.1:${await closedPort()}/`)).forward(delivery);
    handler.behaviour = () => undefined;
    const timedOut = await new Forwarder(handler.url()).forward({ ...delivery, timeout_ms: 100 });
    for (const result of [answered, refused, timedOut]) expect(Gateway.parseResultFrame(JSON.stringify(result))).toEqual(result);
    expect([answered.status, refused.error, timedOut.error]).toEqual([503, 'refused', 'timeout']);
  });
});
