import { randomBytes } from 'node:crypto';
import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const [older, newer] = [randomBytes(32), randomBytes(32)];

  it('seals under the newest key, bound to its owner, and opens under any listed key', () => {
    const box = SecretBox.of([older]);
    const sealed = box.seal('whsec_abc', 'workspace:ws_1');
    expect(sealed).toMatch(/^enc1:[0-9a-f]{8}:/);
    expect(sealed).not.toContain('whsec_');
    expect(box.open(sealed, 'workspace:ws_1')).toBe('whsec_abc');
    expect(() => box.open(sealed, 'workspace:ws_2')).toThrow('another owner');
    // After a rotation of the key-encryption key: old values still open, new ones use the new key.
    const rotated = SecretBox.of([newer, older]);
    expect(rotated.open(sealed, 'workspace:ws_1')).toBe('whsec_abc');
    expect(rotated.isCurrent(sealed)).toBe(false);
    expect(rotated.isCurrent(rotated.seal('x', 'o'))).toBe(true);
    expect(() => SecretBox.of([newer]).open(sealed, 'workspace:ws_1')).toThrow('does not hold');
  });

  it('reads values stored before sealing as they are, and seals nothing without a key', () => {
    expect(SecretBox.of([older]).open('whsec_plain', 'o')).toBe('whsec_plain');
    expect(SecretBox.none().seal('whsec_plain', 'o')).toBe('whsec_plain');
    expect(() => SecretBox.of([randomBytes(16)])).toThrow('32 bytes');
  });
});
