import { planScene } from './plan';
import { interpretEdit, interpretPrompt } from './vocabulary';

describe('interpretPrompt', () => {
  it('reads subject, setting, time, style and composition words', () => {
    const m = interpretPrompt('A wide view of two red boats on a calm lake at dawn, pastel, on the left');
    expect(m.subjects).toEqual([{ kind: 'boat', count: 2, colour: expect.any(Object) }]);
    expect(m.settings).toEqual(['lake']);
    expect(m.time).toBe('dawn');
    expect(m.style).toBe('pastel');
    expect(m.framing).toBe('wide');
    expect(m.side).toBe('left');
    expect(m.moods).toContain('calm');
  });

  it.each([
    ['a lighthouse at dusk', 'lighthouse'],
    ['kittens', 'cat'],
    ['three puppies', 'dog'],
    ['wolves howling', 'fox'],
    ['a hot air balloon', 'balloon'],
    ['sailboats', 'boat'],
    ['a cottage', 'house'],
    ['skyscrapers', 'city'],
    ['an old oak', 'tree'],
    ['spruce trees', 'pine'],
    ['a spaceship', 'rocket'],
    ['two women', 'person'],
  ])('understands %p as a %s', (prompt, kind) => {
    expect(interpretPrompt(prompt).subjects[0]?.kind).toBe(kind);
  });

  it('counts plurals and count words', () => {
    expect(interpretPrompt('a cat').subjects[0]?.count).toBe(1);
    expect(interpretPrompt('cats').subjects[0]?.count).toBe(3);
    expect(interpretPrompt('a pair of swans').subjects[0]).toMatchObject({ kind: 'bird', count: 2 });
    expect(interpretPrompt('a flock of birds').subjects[0]?.count).toBe(5);
    expect(interpretPrompt('99 balloons').subjects[0]?.count).toBe(6);
  });

  it('puts a subject on a mountain instead of drawing two subjects', () => {
    const m = interpretPrompt('a castle on a mountain in a storm');
    expect(m.subjects).toEqual([{ kind: 'castle', count: 1, pedestal: 'peak' }]);
    expect(m.settings).toContain('mountains');
    expect(m.weather).toContain('storm');
  });

  it('treats a city named beside a subject as the setting', () => {
    const m = interpretPrompt('a robot in the city at night');
    expect(m.subjects.map((s) => s.kind)).toEqual(['robot']);
    expect(m.settings).toContain('city');
  });

  it('reads "red fox" as ginger fur', () => {
    const fox = interpretPrompt('a red fox').subjects[0];
    expect(fox?.colour?.r).toBeGreaterThan(fox?.colour?.g as number);
    expect(fox?.colour?.g).toBeGreaterThan(80);
  });

  it('keeps unknown words apart, and never throws', () => {
    expect(interpretPrompt('a zorblax near the quux').unknown).toEqual(['zorblax', 'quux']);
    for (const odd of ['', '   ', '😀🚀', '<svg onload=alert(1)>', 'x'.repeat(100_000), 'Ünïcödé Straße']) {
      expect(() => interpretPrompt(odd)).not.toThrow();
    }
  });

  it('gives every prompt a coherent scene, unknown words included', () => {
    for (const prompt of ['', 'zorblax', 'the meaning of life']) {
      const plan = planScene(interpretPrompt(prompt), 1, 0, 256, 256);
      expect(plan.subjects.length).toBeGreaterThan(0);
    }
  });
});

describe('interpretEdit', () => {
  it.each<[string, Partial<ReturnType<typeof interpretEdit>>]>([
    ['make it sunset', { grades: ['sunset'] }],
    ['make it night', { grades: ['night'] }],
    ['black and white', { grades: ['bw'] }],
    ['make it sepia', { grades: ['sepia'] }],
    ['warmer', { grades: ['warmer'] }],
    ['make it cooler and brighter', { grades: ['cooler', 'brighter'] }],
    ['darker please', { grades: ['darker'] }],
    ['blur the background', { blurBackground: true }],
    ['make it snow', { snow: true }],
    ['add rain', { rain: true }],
  ])('%p', (prompt, expected) => {
    expect(interpretEdit(prompt)).toMatchObject(expected);
  });

  it('collects subjects to add', () => {
    expect(interpretEdit('add a cat and a moon').add.map((s) => s.kind)).toEqual(['cat', 'moon']);
    expect(interpretEdit('put two boats on the water').add[0]).toMatchObject({ kind: 'boat', count: 2 });
  });
});
