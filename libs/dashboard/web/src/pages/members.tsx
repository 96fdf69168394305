import { useState } from 'preact/hooks';
import type { CreatedMember, Role } from '../api';
import { ConfirmButton, CopyButton, ErrorBanner, useApp, useFollowingState, useLoad } from '../ui';

const ROLES: Role[] = ['owner', 'admin', 'member'];

export function MembersPage() {
  const { api, session } = useApp();
  const { data, error, reload } = useLoad(() => api.members(), []);
  const [actionError, setActionError] = useState<unknown>(null);
  const [created, setCreated] = useState<CreatedMember | null>(null);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const isOwner = session.member.role === 'owner';

  async function act(what: () => Promise<unknown>) {
    setActionError(null);
    try {
      await what();
    } catch (err) {
      setActionError(err);
    }
    void reload();
  }

  return (
    <>
      <h1>Members</h1>
      <ErrorBanner error={error} />
      <ErrorBanner error={actionError} />
      {created ? (
        <div class="banner banner-success" role="status">
          <p>
            <strong>{created.email}</strong> added as {created.role}. Give them this password; it is shown only once:
          </p>
          <p class="secret-line">
            <code class="secret">{created.password}</code> <CopyButton text={created.password} />
          </p>
          <button type="button" class="btn btn-small" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      ) : null}
      <section class="card">
        <div class="table-wrap">
          <table class="table table-stack">
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Role</th>
                {isOwner ? (
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {(data ?? []).map((m) => (
                <tr key={m.email}>
                  <td data-label="E-mail" class="break">
                    {m.email} {m.email === session.member.email ? <span class="muted">(you)</span> : null}
                  </td>
                  <td data-label="Role">
                    {isOwner ? (
                      <RoleChoice email={m.email} role={m.role} onChange={(role) => act(() => api.setRole(m.email, role))} />
                    ) : (
                      <span class="role">{m.role}</span>
                    )}
                  </td>
                  {isOwner ? (
                    <td class="actions actions-cell">
                      <ConfirmButton
                        label="Remove"
                        confirmLabel="Remove now"
                        question={`Remove ${m.email} from the workspace?`}
                        onConfirm={() => act(() => api.removeMember(m.email))}
                      />
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      {isOwner ? (
        <section class="card" aria-labelledby="add-title">
          <h2 id="add-title">Add a member</h2>
          <form
            class="inline-form"
            onSubmit={async (e) => {
              e.preventDefault();
              setActionError(null);
              try {
                setCreated(await api.addMember(email.trim(), role));
                setEmail('');
              } catch (err) {
                setActionError(err);
              }
              void reload();
            }}
          >
            <div class="field field-grow">
              <label for="m-email">E-mail</label>
              <input id="m-email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="m-role">Role</label>
              <select id="m-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" class="btn btn-primary">
              Add member
            </button>
          </form>
        </section>
      ) : (
        <p class="muted">Only owners add and remove members.</p>
      )}
    </>
  );
}

/**
 * A member's role: choosing another one asks once more in place, since a role change ends every
 * session the member has and may hand them more power (an arrow key on the list alone changed it).
 */
function RoleChoice({ email, role, onChange }: { email: string; role: Role; onChange: (role: Role) => Promise<void> }) {
  // The list read again shows another stored role (this change, or another owner's): show that.
  const [chosen, setChosen] = useFollowingState<Role>(role);
  const [busy, setBusy] = useState(false);
  const question = `Make ${email} ${chosen === 'admin' || chosen === 'owner' ? 'an' : 'a'} ${chosen}? Their open sessions end.`;
  return (
    <>
      <label class="sr-only" for={`role-${email}`}>
        Role of {email}
      </label>
      <select id={`role-${email}`} value={chosen} disabled={busy} onChange={(e) => setChosen(e.currentTarget.value as Role)}>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      {chosen !== role ? (
        <span class="confirm" role="group" aria-label={question}>
          <span class="confirm-question">{question}</span>
          <button
            type="button"
            class="btn btn-primary btn-small"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await onChange(chosen);
              } finally {
                setBusy(false);
              }
            }}
          >
            Change role
          </button>
          <button type="button" class="btn btn-small" onClick={() => setChosen(role)}>
            Cancel
          </button>
        </span>
      ) : null}
    </>
  );
}
