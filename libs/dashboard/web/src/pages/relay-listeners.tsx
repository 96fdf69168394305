import { Fragment } from 'preact';
import { Link } from 'wouter-preact';
import type { RelayListeners } from '../api';
import { CopyButton, ErrorBanner, plural, Time, useApp } from '../ui';

/** What a developer runs to receive the workspace's callbacks on their machine (the CLI's own example). */
export const LISTEN_COMMAND = 'npx media-callbacks listen --forward-to http://localhost:3000/webhooks';

/** How a callback or an endpoint whose URL is the workspace's relay URL is marked wherever its URL is shown. */
export const RELAY_LABEL = 'relay (media-callbacks listen)';

/**
 * Beside a relay URL: its callbacks are not sent over the network but down a developer's
 * `media-callbacks listen` connection, so "which host" means nothing for them and a listener does.
 */
export function RelayTag() {
  return (
    <span class="tag tag-relay" data-testid="relay-tag" title="Delivered through a developer’s media-callbacks listen connection, not over the network">
      {RELAY_LABEL}
    </span>
  );
}

/**
 * The Webhook endpoints page's section on the workspace's `media-callbacks listen` connections: its
 * relay URL, to give as a job's `callback_url` or an endpoint's URL, and each listener connected now,
 * since when, with which API key (its prefix: the key itself is never shown) and the events it
 * subscribed to. Without one, the command that starts one.
 */
export function RelayListenersSection({ data, error }: { data: RelayListeners | undefined; error: unknown }) {
  const { now } = useApp();
  const listeners = data?.data ?? [];
  return (
    <section class="card relay" aria-labelledby="relay-title" data-testid="relay-listeners">
      <h2 id="relay-title">Listeners on developers’ machines (media-callbacks listen)</h2>
      <p class="muted small">
        <code>media-callbacks listen</code> passes callbacks to a handler on a developer’s machine through one outbound connection to the API, with no public
        address: those sent to the workspace’s relay URL (as a request’s <code>callback_url</code> or an endpoint’s URL) and, with <code>--events</code>, every
        job end of those events. Each is a callback like any other, with its attempts on its request’s page.
      </p>
      <ErrorBanner error={error} />
      {data ? (
        <>
          <dl class="fields relay-fields">
            <dt>Relay URL</dt>
            <dd>
              {data.relay_url ? (
                <span class="secret-line">
                  <code class="secret" data-testid="relay-url">
                    {data.relay_url}
                  </code>{' '}
                  <CopyButton text={data.relay_url} label="Copy URL" />
                </span>
              ) : (
                <span class="muted" data-testid="relay-url-none">
                  None yet: it is made when the first listener connects, and stays the same across connections.
                </span>
              )}
            </dd>
          </dl>
          <h3>
            Connected now: {listeners.length} <span class="muted small">(at most {data.max_listeners} at once)</span>
          </h3>
          {listeners.length === 0 ? (
            <div class="relay-none" data-testid="no-listener">
              <p>
                <strong>No listener connected.</strong> To receive callbacks on your machine, run, with <code>MEDIA_API_KEY</code> set to one of the workspace’s{' '}
                <Link href="/keys">API keys</Link>:
              </p>
              <span class="secret-line">
                <code class="secret command" data-testid="listen-command">
                  {/* Lines break between words only: a break inside `--forward-to` would read as two arguments. */}
                  {LISTEN_COMMAND.split(' ').map((word, i) => (
                    <Fragment key={i}>
                      {i > 0 ? ' ' : null}
                      <span class="nowrap">{word}</span>
                    </Fragment>
                  ))}
                </code>{' '}
                <CopyButton text={LISTEN_COMMAND} label="Copy command" />
              </span>
            </div>
          ) : (
            <div class="table-wrap">
              <table class="table table-stack" data-testid="listeners">
                <thead>
                  <tr>
                    <th scope="col">Connected since</th>
                    <th scope="col">API key</th>
                    <th scope="col">Events</th>
                    <th scope="col">Session</th>
                  </tr>
                </thead>
                <tbody>
                  {listeners.map((l) => (
                    <tr key={l.session_id} data-testid="listener" data-id={l.session_id}>
                      <td data-label="Connected since">
                        <Time at={l.connected_at} now={now} />
                      </td>
                      <td data-label="API key" data-testid="listener-key">
                        {l.api_key.prefix ? <span class="mono">{l.api_key.prefix}</span> : <span class="result-bad">Revoked key</span>}{' '}
                        <span class="mono small muted">{l.api_key.id}</span>
                      </td>
                      <td data-label="Events" data-testid="listener-events">
                        {l.events.length > 0 ? (
                          <ul class="chips" aria-label="Events">
                            {l.events.map((t) => (
                              <li key={t} class="chip mono">
                                {t}
                              </li>
                            ))}
                          </ul>
                        ) : (
                          <span class="muted">None: only callbacks sent to the relay URL</span>
                        )}
                      </td>
                      <td data-label="Session" class="mono small">
                        {l.session_id}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {listeners.length > 0 ? (
            <p class="muted small">
              {plural(listeners.length, 'listener')} connected; each delivery goes to the one that connected last. A listener whose key is revoked is cut within
              seconds.
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
