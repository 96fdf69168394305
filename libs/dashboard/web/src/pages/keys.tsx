import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import type { AsymmetricSigningState, CreatedApiKey, RevealedSecrets, TestCallbackResult } from '../api';
import { formatDuration } from '../time';
import { ConfirmButton, CopyButton, EmptyRow, ErrorBanner, Notice, StateBadge, Time, useApp, useLoad } from '../ui';

export function KeysPage() {
  const { api, now, session } = useApp();
  const { data, error, reload } = useLoad(() => api.keys(), []);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [secrets, setSecrets] = useState<RevealedSecrets | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const canManageKeys = session.member.role !== 'member';

  async function act<T>(what: () => Promise<T>): Promise<T | undefined> {
    setActionError(null);
    setNote(null);
    try {
      return await what();
    } catch (err) {
      setActionError(err);
      return undefined;
    }
  }

  const signing = data?.signing;
  // The revealed secrets are the freshest word on the overlap once shown; otherwise the page's summary.
  const overlapEnds = secrets ? secrets.previous_expires_at : (signing?.previous_expires_at ?? null);

  return (
    <>
      <h1>API keys and signing secret</h1>
      <ErrorBanner error={error} />
      <ErrorBanner error={actionError} />
      {note ? <Notice>{note}</Notice> : null}

      <section class="card" aria-labelledby="keys-title">
        <div class="section-head">
          <h2 id="keys-title">API keys</h2>
          {canManageKeys ? (
            <button
              type="button"
              class="btn btn-primary"
              onClick={async () => {
                const key = await act(() => api.createKey());
                if (key) {
                  setCreated(key);
                  void reload();
                }
              }}
            >
              Create API key
            </button>
          ) : null}
        </div>
        {created ? (
          <div class="banner banner-success" role="status">
            <p>
              <strong>New key created.</strong> Copy it now: it is shown only once.
            </p>
            <p class="secret-line">
              <code class="secret" data-testid="new-key">
                {created.key}
              </code>{' '}
              <CopyButton text={created.key} />
            </p>
            <button type="button" class="btn btn-small" onClick={() => setCreated(null)}>
              I have stored it
            </button>
          </div>
        ) : null}
        <div class="table-wrap">
          <table class="table table-stack">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                {canManageKeys ? (
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {(data?.api_keys ?? []).map((k) => (
                <tr key={k.id}>
                  <td class="mono" data-label="Key">
                    {k.prefix}
                  </td>
                  <td data-label="Created">
                    <Time at={k.created_at} now={now} />
                  </td>
                  <td data-label="Last used">
                    <Time at={k.last_used_at} now={now} empty="Never" />
                  </td>
                  {canManageKeys ? (
                    <td class="actions actions-cell">
                      <ConfirmButton
                        label="Revoke"
                        confirmLabel="Revoke now"
                        question={`Revoke ${k.prefix}? Clients using it stop working at once.`}
                        onConfirm={async () => {
                          await act(() => api.revokeKey(k.id));
                          void reload();
                        }}
                      />
                    </td>
                  ) : null}
                </tr>
              ))}
              {data && data.api_keys.length === 0 ? <EmptyRow columns={4}>No API keys. Create one to call the API.</EmptyRow> : null}
            </tbody>
          </table>
        </div>
      </section>

      <section class="card" aria-labelledby="secret-title">
        <div class="section-head">
          <h2 id="secret-title">Signing secret</h2>
          <div class="btn-row">
            {!secrets ? (
              <button
                type="button"
                class="btn"
                onClick={async () => {
                  const s = await act(() => api.revealSecrets());
                  if (s) setSecrets(s);
                }}
              >
                Reveal signing secret
              </button>
            ) : (
              <button type="button" class="btn" onClick={() => setSecrets(null)}>
                Hide secret
              </button>
            )}
            {signing?.can_rotate ? (
              <ConfirmButton
                label="Rotate secret"
                confirmLabel="Rotate now"
                danger={false}
                question="Issue a new secret? The old one keeps signing for 24 hours."
                onConfirm={async () => {
                  const s = await act(() => api.rotateSecret());
                  if (s) {
                    setSecrets(s);
                    setNote('Secret rotated. Callbacks carry both signatures until the old secret stops signing.');
                    void reload();
                  }
                }}
              />
            ) : null}
            {signing?.can_end_overlap && overlapEnds !== null ? (
              <ConfirmButton
                label="End overlap now"
                confirmLabel="Stop old secret now"
                question="Stop signing with the old secret now? Receivers still on it will reject callbacks."
                onConfirm={async () => {
                  const s = await act(() => api.endOverlap());
                  if (s) {
                    setSecrets(s);
                    setNote('The old secret no longer signs.');
                    void reload();
                  }
                }}
              />
            ) : null}
          </div>
        </div>
        <p class="muted">
          Callbacks are signed with this secret (Standard Webhooks, HMAC-SHA256). Receivers verify the <code>webhook-signature</code> header with it.
        </p>
        <dl class="fields">
          <dt>Current secret</dt>
          <dd>
            {secrets ? (
              <span class="secret-line">
                <code class="secret" data-testid="current-secret">
                  {secrets.current}
                </code>{' '}
                <CopyButton text={secrets.current} />
              </span>
            ) : (
              <span class="muted">Hidden</span>
            )}
            {signing ? (
              <div class="small muted">
                Issued <Time at={signing.current_created_at} now={now} inline />
              </div>
            ) : null}
          </dd>
          {overlapEnds !== null ? (
            <>
              <dt>Previous secret</dt>
              <dd>
                {secrets?.previous ? (
                  <span class="secret-line">
                    <code class="secret" data-testid="previous-secret">
                      {secrets.previous}
                    </code>{' '}
                    <CopyButton text={secrets.previous} />
                  </span>
                ) : (
                  <span class="muted">Hidden</span>
                )}
                <div class="small" data-testid="overlap-ends">
                  Still signing alongside the current one. Stops signing <Time at={overlapEnds} now={now} inline />
                </div>
              </dd>
            </>
          ) : null}
        </dl>
        {signing && !signing.can_rotate ? <p class="small muted">Only owners and admins can rotate the secret.</p> : null}
      </section>

      {data ? <AsymmetricSection initial={data.asymmetric} workspaceId={session.workspace.id} /> : null}

      <TestCallbackSection />
    </>
  );
}

/** Opt-in `v1a` (ed25519) signatures: the public keys receivers verify with, shown as they are (they are public). */
function AsymmetricSection({ initial, workspaceId }: { initial: AsymmetricSigningState; workspaceId: string }) {
  const { api, now } = useApp();
  const [state, setState] = useState<AsymmetricSigningState>(initial);
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState<string | null>(null);
  const enabled = state.public_keys.length > 0;

  async function act(what: () => Promise<AsymmetricSigningState>, done: string): Promise<void> {
    setError(null);
    setNote(null);
    try {
      setState(await what());
      setNote(done);
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section class="card" aria-labelledby="asymmetric-title">
      <div class="section-head">
        <h2 id="asymmetric-title">Asymmetric signatures (v1a)</h2>
        {state.can_manage ? (
          <div class="btn-row">
            {!enabled ? (
              <ConfirmButton
                label="Turn on asymmetric signing"
                confirmLabel="Turn on now"
                danger={false}
                question="Sign every callback with an ed25519 key too? Callbacks keep their v1 signature."
                onConfirm={() => act(() => api.enableAsymmetricSigning(), 'Asymmetric signing is on: callbacks now carry a v1a signature beside v1.')}
              />
            ) : (
              <ConfirmButton
                label="Rotate signing key"
                confirmLabel="Rotate key now"
                danger={false}
                question="Make a new key pair? The old one keeps signing for 24 hours."
                onConfirm={() => act(() => api.rotateSigningKey(), 'Signing key rotated. Callbacks carry both v1a signatures until the old key stops signing.')}
              />
            )}
          </div>
        ) : null}
      </div>
      {note ? <Notice>{note}</Notice> : null}
      <ErrorBanner error={error} />
      <p class="muted">
        Receivers verify a <code>v1a</code> signature with a public key, which cannot sign: it may be shared freely. The keys are also served, without an API
        key, at <code>{`/v1/webhook-keys/${workspaceId}`}</code>.
      </p>
      {enabled ? (
        <dl class="fields" data-testid="public-keys">
          {state.public_keys.map((k) => (
            <Fragment key={k.public_key}>
              <dt>{k.expires_at === null ? 'Current public key' : 'Previous public key'}</dt>
              <dd>
                <span class="secret-line">
                  <code class="secret" data-testid={k.expires_at === null ? 'current-public-key' : 'previous-public-key'}>
                    {k.public_key}
                  </code>{' '}
                  <CopyButton text={k.public_key} />
                </span>
                <div class="small muted">
                  {k.expires_at === null ? (
                    <>
                      Made <Time at={k.created_at} now={now} inline />
                    </>
                  ) : (
                    <>
                      Still signing alongside the current one. Stops signing <Time at={k.expires_at} now={now} inline />
                    </>
                  )}
                </div>
              </dd>
            </Fragment>
          ))}
        </dl>
      ) : (
        <p data-testid="asymmetric-off">Off: callbacks carry HMAC (v1) signatures only.</p>
      )}
      {!state.can_manage ? <p class="small muted">Only owners and admins can turn it on or rotate the key.</p> : null}
    </section>
  );
}

function TestCallbackSection() {
  const { api } = useApp();
  const [url, setUrl] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<TestCallbackResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  return (
    <section class="card" aria-labelledby="test-title">
      <h2 id="test-title">Send test callback</h2>
      <p class="muted">Sends a signed sample event to a URL, under the same URL rules and signing as real callbacks, and shows the answer.</p>
      <form
        class="inline-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          setResult(null);
          try {
            setResult(await api.testCallback(url.trim()));
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <div class="field field-grow">
          <label for="test-url">Receiver URL</label>
          <input id="test-url" type="url" required placeholder="https://example.com/webhooks" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </div>
        <button type="submit" class="btn btn-primary" disabled={busy}>
          {busy ? 'Sending…' : 'Send test callback'}
        </button>
      </form>
      <ErrorBanner error={error} />
      {result ? (
        <div class="test-result" role="status">
          <dl class="fields">
            <dt>Result</dt>
            <dd>
              <StateBadge state={result.delivered ? 'delivered' : 'failed'} />{' '}
              {result.status_code !== null ? `HTTP ${result.status_code}` : (result.error ?? '')}
            </dd>
            <dt>Duration</dt>
            <dd>{formatDuration(result.duration_ms)}</dd>
            <dt>Address</dt>
            <dd class="mono">{result.address ?? '—'}</dd>
            <dt>webhook-id</dt>
            <dd class="mono">{result.webhook_id}</dd>
            <dt>Response excerpt</dt>
            <dd>{result.response_excerpt ? <pre class="excerpt">{result.response_excerpt}</pre> : <span class="muted">(empty)</span>}</dd>
          </dl>
        </div>
      ) : null}
    </section>
  );
}
