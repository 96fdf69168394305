/** Base of the accounts errors, so that a front end maps them in one place. */
export class AccountsError extends Error {}

export class InvalidCredentialsError extends AccountsError {
  override readonly name = 'InvalidCredentialsError';
  constructor() {
    super('Incorrect e-mail or password.');
  }
}

/** Too many failed sign-ins for this e-mail or from this address. */
export class SignInThrottledError extends AccountsError {
  override readonly name = 'SignInThrottledError';
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many failed sign-in attempts. Try again in ${retryAfterSeconds} s.`);
  }
}

export class MemberNotFoundError extends AccountsError {
  override readonly name = 'MemberNotFoundError';
  constructor(readonly email: string) {
    super(`No member '${email}' in this workspace.`);
  }
}

export class MemberExistsError extends AccountsError {
  override readonly name = 'MemberExistsError';
  constructor(readonly email: string) {
    super(`'${email}' is already a member of this workspace.`);
  }
}

/** The change would leave the workspace without an owner. */
export class LastOwnerError extends AccountsError {
  override readonly name = 'LastOwnerError';
  constructor(readonly email: string) {
    super(`'${email}' is the last owner of this workspace; make another member owner first.`);
  }
}

export class ApiKeyNotFoundError extends AccountsError {
  override readonly name = 'ApiKeyNotFoundError';
  constructor(readonly keyId: string) {
    super(`No API key found with id '${keyId}'.`);
  }
}

export class WorkspaceNotFoundError extends AccountsError {
  override readonly name = 'WorkspaceNotFoundError';
  constructor(readonly workspaceId: string) {
    super(`No workspace ${workspaceId}.`);
  }
}

/** A signing key pair was to be rotated, but the workspace does not sign asymmetrically (turn it on first). */
export class AsymmetricSigningOffError extends AccountsError {
  override readonly name = 'AsymmetricSigningOffError';
  constructor(readonly workspaceId: string) {
    super(`Workspace ${workspaceId} does not sign with an ed25519 key (v1a); turn asymmetric signing on first.`);
  }
}

export class InvalidAccountInputError extends AccountsError {
  override readonly name = 'InvalidAccountInputError';
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}
