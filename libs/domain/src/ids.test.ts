import { derivedId, newId } from './ids';

describe('newId', () => {
  it('makes distinct ids of the documented form, across many refills of its pool of random bytes', () => {
    const ids = Array.from({ length: 5_000 }, () => newId('req'));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]{24}$/);
  });

  it('takes any length, longer than its pool too', () => {
    expect(newId('x', 16)).toMatch(/^x_[0-9a-z]{16}$/);
    expect(newId('x', 4_000)).toMatch(/^x_[0-9a-z]{4000}$/);
    expect(newId('x', 4_000)).not.toBe(newId('x', 4_000));
  });

  it('spreads over the whole alphabet', () => {
    const chars = new Set(Array.from({ length: 200 }, () => newId('a').slice(2)).join(''));
    expect(chars.size).toBe(36);
  });
});

describe('derivedId', () => {
  it('is the same for the same inputs', () => {
    expect(derivedId('gen', 'a', 'b')).toBe(derivedId('gen', 'a', 'b'));
    expect(derivedId('gen', 'a', 'b')).not.toBe(derivedId('gen', 'ab'));
  });
});
