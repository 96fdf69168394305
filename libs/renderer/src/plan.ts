import { SeededRandom } from './random';
import type { Rgb } from './colour';
import type { Framing, Pedestal, PromptMeaning, SettingKind, Style, SubjectKind, TimeOfDay, Weather } from './vocabulary';

/** Where a subject lives, which decides its baseline, its scale and how it may move in a video. */
export type Zone = 'ground' | 'water' | 'sky' | 'under';

/** Distant scenery drawn between the sky and the ground. */
export type Backdrop = 'mountains' | 'hills' | 'treeline' | 'skyline' | 'dunes' | 'farshore' | 'islands';

/** One subject instance with its position in pixels. */
export interface Placed {
  kind: SubjectKind;
  /** Horizontal centre. */
  x: number;
  /** Baseline: where it touches the ground or the water (for sky subjects, its lowest point). */
  base: number;
  /** Drawn height in pixels. */
  size: number;
  /** Mirror horizontally; drawings face left by default, so subjects on the left turn to face into the frame. */
  flip: boolean;
  zone: Zone;
  primary: boolean;
  /** Scenery added by the setting rather than asked for (trees at a forest's edge). */
  decor: boolean;
  colour?: Rgb;
  pedestal?: Pedestal;
  /** 0 = far, 1 = near; used for draw order and scale. */
  depth: number;
  /** A per-instance stream for small drawing variations (window lights, blade angle). */
  variant: number;
}

/** The whole scene, resolved: every free choice is made here so drawing is a pure function of the plan. */
export interface ScenePlan {
  width: number;
  height: number;
  setting: SettingKind;
  backdrops: Backdrop[];
  time: TimeOfDay;
  weather: Weather[];
  style: Style;
  framing: Framing;
  snowy: boolean;
  calm: boolean;
  rough: boolean;
  dark: boolean;
  bright: boolean;
  /** y of the horizon in pixels. */
  horizon: number;
  sun?: { x: number; y: number; r: number };
  moon?: { x: number; y: number; r: number; crescent: boolean };
  lightFromLeft: boolean;
  /** Back to front. */
  subjects: Placed[];
  /** The mountain that a "castle on a mountain" stands on. */
  peak?: { x: number; top: number; halfWidth: number };
  /** Skyline drawn large as the subject rather than as distant scenery. */
  skylineSubject: boolean;
  bridge: boolean;
  /** Seeds for layer-specific random streams; they exclude the subjects so the sky of two prompts that differ only in subject is the same. */
  seedParts: unknown[];
}

interface KindInfo {
  zone: Zone;
  /** Height as a fraction of the image height at medium framing. */
  height: number;
  /** Drawn width / height, to keep instances from overlapping. */
  aspect: number;
}

const KINDS: Record<SubjectKind, KindInfo> = {
  lighthouse: { zone: 'ground', height: 0.5, aspect: 0.32 },
  house: { zone: 'ground', height: 0.3, aspect: 1 },
  tree: { zone: 'ground', height: 0.42, aspect: 0.8 },
  pine: { zone: 'ground', height: 0.45, aspect: 0.5 },
  mountain: { zone: 'ground', height: 0.4, aspect: 2 },
  castle: { zone: 'ground', height: 0.36, aspect: 1.25 },
  boat: { zone: 'water', height: 0.34, aspect: 0.9 },
  ship: { zone: 'water', height: 0.26, aspect: 1.8 },
  car: { zone: 'ground', height: 0.13, aspect: 2.1 },
  cat: { zone: 'ground', height: 0.2, aspect: 0.75 },
  dog: { zone: 'ground', height: 0.2, aspect: 1.3 },
  fox: { zone: 'ground', height: 0.2, aspect: 1.6 },
  bird: { zone: 'sky', height: 0.05, aspect: 3 },
  fish: { zone: 'water', height: 0.1, aspect: 2.4 },
  whale: { zone: 'water', height: 0.16, aspect: 3.2 },
  flower: { zone: 'ground', height: 0.2, aspect: 0.5 },
  sun: { zone: 'sky', height: 0.2, aspect: 1 },
  moon: { zone: 'sky', height: 0.2, aspect: 1 },
  city: { zone: 'ground', height: 0.4, aspect: 3 },
  bridge: { zone: 'ground', height: 0.3, aspect: 3 },
  tower: { zone: 'ground', height: 0.5, aspect: 0.4 },
  windmill: { zone: 'ground', height: 0.48, aspect: 0.9 },
  robot: { zone: 'ground', height: 0.34, aspect: 0.6 },
  rocket: { zone: 'sky', height: 0.42, aspect: 0.4 },
  balloon: { zone: 'sky', height: 0.3, aspect: 0.65 },
  person: { zone: 'ground', height: 0.3, aspect: 0.35 },
  snowman: { zone: 'ground', height: 0.28, aspect: 0.6 },
  cactus: { zone: 'ground', height: 0.36, aspect: 0.6 },
  tent: { zone: 'ground', height: 0.22, aspect: 1.5 },
  campfire: { zone: 'ground', height: 0.12, aspect: 1.2 },
  planet: { zone: 'sky', height: 0.3, aspect: 1.4 },
};

const HOME: Record<SubjectKind, SettingKind[]> = {
  lighthouse: ['sea'],
  house: ['meadow', 'meadow', 'forest'],
  tree: ['meadow'],
  pine: ['forest', 'mountains'],
  mountain: ['mountains'],
  castle: ['mountains', 'meadow'],
  boat: ['sea', 'lake'],
  ship: ['sea'],
  car: ['city', 'desert'],
  cat: ['meadow'],
  dog: ['meadow'],
  fox: ['forest', 'meadow'],
  bird: ['sea', 'meadow'],
  fish: ['underwater'],
  whale: ['sea'],
  flower: ['meadow'],
  sun: ['sea', 'meadow'],
  moon: ['sea', 'mountains', 'meadow'],
  city: ['lake'],
  bridge: ['lake'],
  tower: ['meadow'],
  windmill: ['meadow'],
  robot: ['city', 'desert'],
  rocket: ['space', 'desert'],
  balloon: ['meadow', 'mountains'],
  person: ['meadow', 'mountains', 'beach'],
  snowman: ['snowfield'],
  cactus: ['desert'],
  tent: ['forest', 'mountains'],
  campfire: ['forest'],
  planet: ['space'],
};

/** Scenes used when the prompt names nothing the vocabulary knows; each is a coherent picture on its own. */
const FALLBACK_SCENES: Array<{ kind: SubjectKind; setting: SettingKind }> = [
  { kind: 'house', setting: 'meadow' },
  { kind: 'boat', setting: 'sea' },
  { kind: 'lighthouse', setting: 'sea' },
  { kind: 'tree', setting: 'meadow' },
  { kind: 'castle', setting: 'mountains' },
  { kind: 'balloon', setting: 'meadow' },
  { kind: 'windmill', setting: 'meadow' },
  { kind: 'tent', setting: 'forest' },
  { kind: 'boat', setting: 'lake' },
  { kind: 'cactus', setting: 'desert' },
  { kind: 'planet', setting: 'space' },
  { kind: 'fish', setting: 'underwater' },
];

const HORIZON: Record<SettingKind, number> = {
  sea: 0.58,
  beach: 0.52,
  lake: 0.58,
  desert: 0.62,
  snowfield: 0.62,
  forest: 0.66,
  city: 0.68,
  space: 0.8,
  meadow: 0.62,
  mountains: 0.66,
  underwater: 0.06,
};

const FRAMING_SCALE: Record<Framing, number> = { close: 1.65, medium: 1, wide: 0.55 };
const FRAMING_DEPTH: Record<Framing, number> = { close: 0.9, medium: 0.6, wide: 0.3 };

function zoneFor(kind: SubjectKind, setting: SettingKind): Zone {
  const zone = KINDS[kind].zone;
  if (setting === 'underwater') return zone === 'water' || kind === 'fish' ? 'under' : zone === 'sky' ? 'under' : 'ground';
  if (zone === 'water' && !['sea', 'beach', 'lake'].includes(setting)) return kind === 'fish' ? 'sky' : 'ground';
  return zone;
}

/**
 * Resolves a {@link PromptMeaning} into a concrete scene. Free choices come from seeded streams; streams
 * for scenery do not depend on the subjects, so prompts that differ only in their subject share the sky.
 */
export function planScene(meaning: PromptMeaning, seed: number, index: number, width: number, height: number): ScenePlan {
  const seedParts: unknown[] = [seed, index, meaning.unknown];
  const free = new SeededRandom('free', ...seedParts);
  const layout = new SeededRandom(
    'layout',
    ...seedParts,
    meaning.subjects.map((s) => s.kind),
  );

  let subjects = meaning.subjects.map((s) => ({ ...s }));
  let settings = [...meaning.settings];
  if (subjects.length === 0 && settings.length === 0) {
    const fallback = free.pick(FALLBACK_SCENES);
    subjects = [{ kind: fallback.kind, count: 1 }];
    settings = [fallback.setting];
  }
  const primaryKind = subjects[0]?.kind;
  let setting: SettingKind;
  if (settings.length > 0) {
    setting = settings[0] as SettingKind;
  } else if (meaning.snowy && (primaryKind === undefined || !['boat', 'ship', 'whale', 'fish', 'lighthouse'].includes(primaryKind))) {
    setting = primaryKind === 'fox' || primaryKind === 'pine' ? 'forest' : 'snowfield';
  } else {
    setting = layout.pick(HOME[primaryKind ?? 'house']);
  }
  const sky = new SeededRandom('sky-plan', ...seedParts, setting);
  // "Forest" named alongside a water setting or mountains reads as scenery on the far shore.
  const backdrops = new Set<Backdrop>();
  for (const extra of settings.slice(1)) {
    if (extra === 'mountains') backdrops.add('mountains');
    if (extra === 'forest') backdrops.add('treeline');
    if (extra === 'city') backdrops.add('skyline');
    if (extra === 'desert') backdrops.add('dunes');
    if (extra === 'meadow') backdrops.add('hills');
  }
  const skylineSubject = subjects.some((s) => s.kind === 'city');
  const bridge = subjects.some((s) => s.kind === 'bridge');
  switch (setting) {
    case 'sea':
      if (sky.next() < 0.45) backdrops.add('islands');
      break;
    case 'lake':
      backdrops.add('farshore');
      if (!skylineSubject && sky.next() < 0.5) backdrops.add('mountains');
      break;
    case 'desert':
      backdrops.add('dunes');
      break;
    case 'snowfield':
      backdrops.add('mountains');
      break;
    case 'forest':
      backdrops.add('treeline');
      break;
    case 'city':
      backdrops.add('skyline');
      break;
    case 'meadow':
      backdrops.add('hills');
      if (sky.next() < 0.5) backdrops.add('treeline');
      break;
    case 'mountains':
      backdrops.add('mountains');
      break;
    default:
      break;
  }
  if (skylineSubject) backdrops.delete('skyline');

  const weather = [...meaning.weather];
  if (weather.includes('storm')) {
    if (!weather.includes('rain') && !meaning.snowy) weather.push('rain');
    if (!weather.includes('cloudy')) weather.push('cloudy');
  }

  let time: TimeOfDay;
  if (meaning.time !== undefined) time = meaning.time;
  else if (subjects.some((s) => s.kind === 'moon' || s.kind === 'campfire') || meaning.style === 'neon' || setting === 'space') time = 'night';
  else if (subjects.some((s) => s.kind === 'sun')) time = free.pick(['noon', 'dusk', 'morning'] as const);
  else if (meaning.moods.includes('dark')) time = free.pick(['dusk', 'night'] as const);
  else time = free.pick(['morning', 'noon', 'noon', 'dusk', 'dawn'] as const);

  const framing: Framing = meaning.framing ?? 'medium';
  const calm = meaning.moods.includes('calm');
  const rough = meaning.moods.includes('rough') || weather.includes('storm');
  let horizonFraction = HORIZON[setting];
  if (setting !== 'underwater' && setting !== 'space') {
    if (framing === 'close') horizonFraction += 0.08;
    if (framing === 'wide') horizonFraction -= 0.05;
  }
  if (skylineSubject && setting === 'lake') horizonFraction = 0.66;
  const horizon = Math.round(height * horizonFraction);
  const unit = Math.min(width, height);

  // Sun and moon: low at dawn and dusk (partly behind the horizon), high at noon. Not drawn under water.
  let sunPlan: ScenePlan['sun'];
  let moonPlan: ScenePlan['moon'];
  const bigSun = subjects.some((s) => s.kind === 'sun');
  const bigMoon = subjects.some((s) => s.kind === 'moon');
  const celestialX = width * sky.range(0.18, 0.82);
  const overcast = weather.includes('storm') || weather.includes('fog');
  if (setting !== 'underwater') {
    if (time === 'night') {
      moonPlan = {
        x: celestialX,
        y: height * sky.range(0.12, 0.26),
        r: unit * (bigMoon ? 0.11 : 0.055),
        crescent: !bigMoon && sky.next() < 0.4,
      };
    } else {
      const r = unit * (bigSun ? 0.1 : time === 'noon' ? 0.045 : 0.065);
      // Behind mountains or a skyline a sun on the horizon would be hidden, so it sits just above them.
      const tallBackdrop = ['mountains', 'snowfield', 'city'].includes(setting) || backdrops.has('mountains') || skylineSubject;
      const y =
        time === 'dawn' || time === 'dusk'
          ? horizon - (tallBackdrop ? height * sky.range(0.3, 0.38) : r * sky.range(0.1, 0.6))
          : time === 'morning'
            ? height * sky.range(0.2, 0.3)
            : height * sky.range(0.08, 0.15);
      if (!overcast || bigSun) sunPlan = { x: celestialX, y, r };
      if (bigMoon) moonPlan = { x: width - celestialX, y: height * 0.18, r: unit * 0.07, crescent: false };
    }
  }
  const lightFromLeft = celestialX < width / 2;

  // Subject layout: the first subject is the primary; extras fill the free space at other depths.
  const placed: Placed[] = [];
  const occupied: Array<[number, number]> = [];
  const overlap = (x0: number, x1: number): number => occupied.reduce((sum, [a, b]) => sum + Math.max(0, Math.min(b, x1) - Math.max(a, x0)), 0);
  const chooseX = (half: number, preferred?: number): number => {
    if (preferred !== undefined) return preferred;
    let best = width / 2;
    let bestScore = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 20; i += 1) {
      const x = width * layout.range(0.08, 0.92);
      const score = overlap(x - half, x + half) + Math.abs(x - width / 2) * 0.02;
      if (score < bestScore) {
        best = x;
        bestScore = score;
      }
    }
    return best;
  };
  const sideX = (side: PromptMeaning['side']): number => {
    if (side === 'left') return width * 0.3;
    if (side === 'right') return width * 0.7;
    if (side === 'centre') return width * 0.5;
    return width * layout.pick([0.38, 0.5, 0.62]) + width * layout.range(-0.03, 0.03);
  };

  let peak: ScenePlan['peak'];
  const scale = FRAMING_SCALE[framing];
  let variant = 0;
  subjects.forEach((mention, mentionIndex) => {
    const kind = mention.kind;
    if (kind === 'sun' || kind === 'moon' || kind === 'city' || kind === 'bridge') return;
    if (kind === 'mountain') {
      backdrops.add('mountains');
      peak = { x: sideX(meaning.side), top: horizon - height * 0.42, halfWidth: width * 0.42 };
      return;
    }
    const info = KINDS[kind];
    const zone = zoneFor(kind, setting);
    const isPrimary = mentionIndex === 0;
    for (let i = 0; i < mention.count; i += 1) {
      const primary = isPrimary && i === 0;
      let depth = primary ? FRAMING_DEPTH[framing] : layout.range(0.15, 0.85);
      let size = height * info.height * (primary ? scale : scale * 0.8);
      if (kind === 'bird' && mention.count > 1) size *= layout.range(0.6, 1.1);
      if (zone === 'under') size *= 1.4;
      // Perspective: things further back are smaller.
      if (!primary && zone !== 'sky' && zone !== 'under') size *= 0.55 + 0.6 * depth;
      if (zone === 'sky' && kind !== 'bird') depth = 0.1;
      size = Math.min(size, height * 0.82);
      const half = (size * info.aspect) / 2;
      const x = chooseX(half, primary ? sideX(meaning.side) : undefined);
      let base: number;
      let pedestal = primary ? mention.pedestal : undefined;
      if (zone === 'sky') {
        const top = kind === 'bird' ? layout.range(0.1, 0.34) : kind === 'rocket' ? layout.range(0.06, 0.14) : layout.range(0.08, 0.2);
        base = height * top + size;
        if (kind === 'fish') base = horizon - size * 0.2; // a fish leaping from a pond or river
        pedestal = undefined;
      } else if (zone === 'under') {
        base = height * (kind === 'fish' ? layout.range(0.35, 0.8) : layout.range(0.45, 0.65)) + size / 2;
      } else if (zone === 'water') {
        const d = primary ? (framing === 'close' ? 0.55 : framing === 'wide' ? 0.12 : 0.3) : layout.range(0.02, 0.3);
        base = horizon + (height - horizon) * d;
        depth = d;
        pedestal = undefined;
      } else {
        base = horizon + (height - horizon) * depth;
      }
      if (zone === 'ground' && setting === 'beach' && pedestal === undefined) {
        // On the sand in front of the shoreline (see the beach ground in scene.ts).
        base = horizon + (height - horizon) * (0.6 + 0.35 * depth);
      } else if (zone === 'ground' && ['sea', 'lake'].includes(setting) && pedestal === undefined) {
        pedestal = 'rocks';
      }
      if (pedestal === 'rocks' && ['sea', 'beach', 'lake'].includes(setting)) {
        // Standing on rocks that rise out of the water, a little in front of the horizon.
        const d = primary ? (framing === 'close' ? 0.5 : 0.22) : 0.05 + depth * 0.5;
        base = horizon + (height - horizon) * d - size * 0.06;
      } else if (pedestal === 'peak') {
        size *= 0.72;
        base = horizon - height * 0.3;
        peak = { x, top: base, halfWidth: width * 0.36 };
      } else if (pedestal === 'hill') {
        base -= height * 0.08;
      }
      occupied.push([x - half, x + half]);
      variant += 1;
      const p: Placed = {
        kind,
        x,
        base,
        size,
        zone,
        primary,
        decor: false,
        depth,
        variant,
        flip: x < width / 2 - width * 0.02 || (Math.abs(x - width / 2) <= width * 0.02 && layout.next() < 0.5),
      };
      if (mention.colour) p.colour = mention.colour;
      if (pedestal) p.pedestal = pedestal;
      placed.push(p);
    }
  });

  // Setting scenery, placed around whatever was asked for.
  const decor = (kind: SubjectKind, count: number, depthMin: number, depthMax: number, sizeScale: number): void => {
    for (let i = 0; i < count; i += 1) {
      const depth = layout.range(depthMin, depthMax);
      const size = height * KINDS[kind].height * sizeScale * (0.5 + 0.7 * depth);
      const half = (size * KINDS[kind].aspect) / 2;
      const x = chooseX(half * 0.8);
      occupied.push([x - half * 0.6, x + half * 0.6]);
      variant += 1;
      placed.push({
        kind,
        x,
        base: horizon + (height - horizon) * depth,
        size,
        zone: 'ground',
        primary: false,
        decor: true,
        depth,
        variant,
        flip: layout.next() < 0.5,
      });
    }
  };
  const hasTrees = placed.some((p) => p.kind === 'tree' || p.kind === 'pine');
  switch (setting) {
    case 'forest':
      if (!hasTrees) decor(meaning.snowy || layout.next() < 0.6 ? 'pine' : 'tree', 4, 0.05, 0.55, 1.2);
      break;
    case 'meadow':
      if (!hasTrees && layout.next() < 0.6) decor(layout.next() < 0.7 ? 'tree' : 'pine', 1, 0.05, 0.35, 1);
      if (!meaning.snowy && !placed.some((p) => p.kind === 'flower')) decor('flower', 5, 0.55, 0.95, 0.45);
      break;
    case 'desert':
      if (!placed.some((p) => p.kind === 'cactus')) decor('cactus', layout.int(1, 2), 0.2, 0.8, 0.7);
      break;
    case 'snowfield':
    case 'mountains':
      if (!hasTrees && !peak) decor('pine', layout.int(2, 4), 0.05, 0.45, 0.7);
      break;
    default:
      break;
  }

  placed.sort((a, b) => {
    const rank = (p: Placed): number => (p.zone === 'sky' ? (p.kind === 'bird' ? 1 : 0) : p.zone === 'under' ? 2 : 3);
    return rank(a) - rank(b) || a.base - b.base;
  });

  return {
    width,
    height,
    setting,
    backdrops: [...backdrops],
    time,
    weather,
    style: meaning.style ?? 'natural',
    framing,
    snowy: meaning.snowy || setting === 'snowfield',
    calm,
    rough,
    dark: meaning.moods.includes('dark'),
    bright: meaning.moods.includes('bright'),
    horizon,
    ...(sunPlan ? { sun: sunPlan } : {}),
    ...(moonPlan ? { moon: moonPlan } : {}),
    lightFromLeft,
    subjects: placed,
    ...(peak ? { peak } : {}),
    skylineSubject,
    bridge,
    seedParts,
  };
}
