import { mix, rgb, type Rgb } from './colour';
import { n, type Painter } from './paint';
import type { SeededRandom } from './random';
import type { SubjectKind } from './vocabulary';

/**
 * Vector drawings of the subjects the vocabulary knows. Each is drawn in local
 * units with its base at y = 0, centred on x = 0 and facing left; the scene
 * scales, mirrors and places it.
 */

export interface DrawOptions {
  /** Light comes from the left in the drawing's own (possibly mirrored) frame. */
  fromLeft: boolean;
  colour?: Rgb;
  rng: SeededRandom;
  lightsOn: boolean;
  night: boolean;
  snowy: boolean;
  /** Windmill blade angle in degrees; blades omitted when null (a video animates them separately). */
  bladeAngle: number | null;
}

export interface Drawing {
  body: string;
  /** Height of the drawing in local units; the scene scales it to the planned size. */
  height: number;
}

/** Local-unit anchor points that the scene needs (lamp of a lighthouse, hub of a windmill). */
export const ANCHORS = {
  lighthouseLamp: { x: 0, y: -84 },
  windmillHub: { x: 0, y: -66 },
  windmillBladeLength: 52,
} as const;

const WHITE = rgb('#f3efe6');
const DARK = rgb('#2b2a30');
const GLASS = rgb('#9ec4da');
const WARM_WINDOW = rgb('#ffcf6b');

function pts(points: Array<[number, number]>): string {
  return points.map(([x, y]) => `${n(x)},${n(y)}`).join(' ');
}

function poly(points: Array<[number, number]>, fill: string, extra = ''): string {
  return `<polygon points="${pts(points)}" fill="${fill}"${extra}/>`;
}

function rect(x: number, y: number, w: number, h: number, fill: string, extra = ''): string {
  return `<rect x="${n(x)}" y="${n(y)}" width="${n(w)}" height="${n(h)}" fill="${fill}"${extra}/>`;
}

function circle(cx: number, cy: number, r: number, fill: string, extra = ''): string {
  return `<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(r)}" fill="${fill}"${extra}/>`;
}

function ellipse(cx: number, cy: number, rx: number, ry: number, fill: string, extra = ''): string {
  return `<ellipse cx="${n(cx)}" cy="${n(cy)}" rx="${n(rx)}" ry="${n(ry)}" fill="${fill}"${extra}/>`;
}

function path(d: string, fill: string, extra = ''): string {
  return `<path d="${d}" fill="${fill}"${extra}/>`;
}

function windowFill(p: Painter, o: DrawOptions, lit: boolean): string {
  return o.lightsOn && lit ? p.emit(WARM_WINDOW) : p.surf(GLASS, 0.8);
}

function lighthouse(p: Painter, o: DrawOptions): Drawing {
  const body = o.colour ?? WHITE;
  const stripe = rgb('#c7302a');
  const hw = (y: number): number => 13 - 4.5 * (y / 74);
  const band = (a: number, b: number): string =>
    poly(
      [
        [-hw(a), -a],
        [hw(a), -a],
        [hw(b), -b],
        [-hw(b), -b],
      ],
      p.lit(stripe, o.fromLeft),
    );
  const parts = [
    poly(
      [
        [-13, 0],
        [13, 0],
        [8.5, -74],
        [-8.5, -74],
      ],
      p.lit(body, o.fromLeft),
    ),
    band(12, 24),
    band(36, 48),
    band(60, 72),
    path('M-3.2,0 V-8 A3.2,3.2 0 0 1 3.2,-8 V0 Z', p.surf(DARK)),
    rect(-1.6, -34, 3.2, 5, windowFill(p, o, true)),
    rect(-1.6, -56, 3.2, 5, windowFill(p, o, false)),
    rect(-12.5, -78, 25, 4, p.surf(rgb('#3a3d44'))),
    `<path d="M-11,-78 V-83 M-5.5,-78 V-83 M0,-78 V-83 M5.5,-78 V-83 M11,-78 V-83 M-11.5,-83 H11.5" stroke="${p.surf(rgb('#2e3036'))}" stroke-width="0.8" fill="none"/>`,
    rect(-6, -91, 12, 13, o.lightsOn ? p.emit(rgb('#fff2b0')) : p.surf(GLASS, 1.1)),
    `<path d="M-2,-91 V-78 M2,-91 V-78" stroke="${p.surf(rgb('#2e3036'))}" stroke-width="0.7"/>`,
    poly(
      [
        [-8.5, -91],
        [8.5, -91],
        [0, -100],
      ],
      p.lit(stripe, o.fromLeft),
    ),
    circle(0, -101, 1.4, p.surf(DARK)),
  ];
  if (o.lightsOn) parts.push(circle(ANCHORS.lighthouseLamp.x, ANCHORS.lighthouseLamp.y, 22, p.glow(p.emit(rgb('#fff1b8')), 0.9)));
  return { body: parts.join(''), height: 102 };
}

function house(p: Painter, o: DrawOptions): Drawing {
  const wall = o.colour ?? o.rng.pick([rgb('#e8dcc4'), rgb('#d9b48f'), rgb('#c9d6e0'), rgb('#efe2b8'), rgb('#b5553c')]);
  const roof = o.rng.pick([rgb('#8c2f28'), rgb('#4a4f5c'), rgb('#6b3f24'), rgb('#2f4a6b')]);
  const lights = [o.rng.next() < 0.8, o.rng.next() < 0.6, o.rng.next() < 0.5];
  const parts = [
    rect(14, -76, 9, 24, p.lit(rgb('#8a4a3a'), o.fromLeft)),
    rect(-32, -42, 64, 42, p.lit(wall, o.fromLeft)),
    poly(
      [
        [-39, -40],
        [0, -78],
        [39, -40],
      ],
      p.lit(roof, o.fromLeft),
    ),
    poly(
      [
        [-39, -40],
        [39, -40],
        [36, -37],
        [-36, -37],
      ],
      p.surf(roof, 0.6),
    ),
    rect(-6, -24, 12, 24, p.surf(rgb('#5a3a26'))),
    circle(3.5, -12, 0.9, p.surf(rgb('#d8b15a'))),
  ];
  for (const [i, x] of [-25, 13].entries()) {
    parts.push(rect(x, -33, 12, 11, windowFill(p, o, lights[i] as boolean)));
    parts.push(`<path d="M${x + 6},-33 V-22 M${x},-27.5 H${x + 12}" stroke="${p.surf(WHITE)}" stroke-width="1"/>`);
  }
  parts.push(circle(0, -55, 4.5, windowFill(p, o, lights[2] as boolean)));
  if (o.snowy) {
    parts.push(path('M-39,-40 L0,-78 L39,-40 L33,-40 L0,-70 L-33,-40 Z', p.surf(rgb('#f4f8ff'), 1.1)));
  }
  if (o.lightsOn && (lights[0] || lights[1])) parts.push(circle(-19, -27, 14, p.glow(p.emit(WARM_WINDOW), 0.35)));
  return { body: parts.join(''), height: 78 };
}

function tree(p: Painter, o: DrawOptions): Drawing {
  const leaf = o.colour ?? o.rng.pick([rgb('#3f8a3c'), rgb('#4c9a3a'), rgb('#357a45'), rgb('#6a9a2c')]);
  const trunk = rgb('#6a4528');
  const blobs: Array<[number, number, number]> = [
    [-18, -52, 20],
    [18, -54, 21],
    [0, -62, 28],
    [-12, -76, 19],
    [13, -76, 19],
    [0, -86, 16],
  ];
  const parts = [
    poly(
      [
        [-5, 0],
        [5, 0],
        [3, -46],
        [-3, -46],
      ],
      p.lit(trunk, o.fromLeft),
    ),
    path('M1,-30 L14,-46 L12,-48 L0,-36 Z', p.surf(trunk, 0.8)),
    ...blobs.map(([x, y, r]) => circle(x, y, r, p.lit(leaf, o.fromLeft))),
  ];
  const side = o.fromLeft ? -1 : 1;
  for (const [x, y, r] of blobs.slice(2)) {
    parts.push(circle(x + side * r * 0.3, y - r * 0.3, r * 0.5, p.surf(mix(leaf, rgb('#d8f0a0'), 0.25)), ' fill-opacity="0.45"'));
  }
  if (o.snowy) {
    for (const [x, y, r] of blobs) parts.push(ellipse(x, y - r * 0.6, r * 0.75, r * 0.35, p.surf(rgb('#f2f6ff'), 1.05)));
  }
  return { body: parts.join(''), height: 102 };
}

function pine(p: Painter, o: DrawOptions): Drawing {
  const green = o.colour ?? o.rng.pick([rgb('#2e5e3a'), rgb('#23513a'), rgb('#3a6b3a')]);
  const tiers: Array<[number, number, number]> = [
    [-10, 26, -48],
    [-32, 21, -66],
    [-52, 16, -84],
    [-70, 10, -100],
  ];
  const parts = [rect(-3.5, -14, 7, 14, p.lit(rgb('#5a3a22'), o.fromLeft))];
  for (const [yb, hw, yt] of tiers) {
    parts.push(path(`M${-hw},${yb} Q0,${yb + 4} ${hw},${yb} L0,${yt} Z`, p.lit(green, o.fromLeft)));
    if (o.snowy) {
      const h = (yb - yt) * 0.42;
      const w = hw * 0.45;
      parts.push(
        path(
          `M0,${yt} L${w},${yt + h} L${w * 0.5},${yt + h * 0.85} L0,${yt + h * 1.05} L${-w * 0.5},${yt + h * 0.85} L${-w},${yt + h} Z`,
          p.surf(rgb('#f4f8ff'), 1.1),
        ),
      );
      parts.push(
        path(
          `M${-hw},${yb} Q0,${yb + 4} ${hw},${yb} Q0,${yb - 1} ${-hw},${yb} Z`,
          p.surf(rgb('#f4f8ff'), 1.05),
          ` stroke="${p.surf(rgb('#f4f8ff'), 1.05)}" stroke-width="2"`,
        ),
      );
    }
  }
  return { body: parts.join(''), height: 100 };
}

function castle(p: Painter, o: DrawOptions): Drawing {
  const stone = o.colour ?? rgb('#b3ab9c');
  const roof = o.rng.pick([rgb('#3d4f86'), rgb('#7a2f3a'), rgb('#4a3a6b')]);
  const merlons = (x0: number, x1: number, y: number, fill: string): string => {
    const out: string[] = [];
    for (let x = x0; x < x1 - 1; x += 6) out.push(rect(x, y - 4, 3.5, 4, fill));
    return out.join('');
  };
  const wallFill = p.lit(stone, o.fromLeft);
  const keepFill = p.lit(mix(stone, WHITE, 0.15), o.fromLeft);
  const parts = [
    rect(-46, -40, 92, 40, wallFill),
    merlons(-46, 46, -40, wallFill),
    rect(-19, -78, 38, 40, keepFill),
    merlons(-19, 19, -78, keepFill),
    rect(-6, -96, 12, 20, keepFill),
    poly(
      [
        [-8, -96],
        [8, -96],
        [0, -112],
      ],
      p.lit(roof, o.fromLeft),
    ),
    `<path d="M0,-112 V-122" stroke="${p.surf(DARK)}" stroke-width="0.8"/>`,
    poly(
      [
        [0, -122],
        [9, -119],
        [0, -116],
      ],
      p.emit(rgb('#d23a2e')),
    ),
  ];
  for (const x of [-58, 40]) {
    parts.push(rect(x, -64, 18, 64, p.lit(stone, o.fromLeft)));
    parts.push(
      poly(
        [
          [x - 3, -64],
          [x + 21, -64],
          [x + 9, -92],
        ],
        p.lit(roof, o.fromLeft),
      ),
    );
    parts.push(rect(x + 7, -48, 4, 8, windowFill(p, o, true), ' rx="2"'));
  }
  parts.push(path('M-10,0 V-18 A10,10 0 0 1 10,-18 V0 Z', p.surf(rgb('#2a2420'))));
  for (const x of [-12, -3, 6]) parts.push(rect(x, -66, 4, 9, windowFill(p, o, x !== -3), ' rx="2"'));
  for (const x of [-36, 28]) parts.push(rect(x, -28, 3, 8, windowFill(p, o, false), ' rx="1.5"'));
  if (o.snowy) {
    for (const [x, w] of [
      [-61, 24],
      [37, 24],
      [-11, 22],
    ] as Array<[number, number]>) {
      parts.push(
        poly(
          [
            [x, x === -11 ? -96 : -64],
            [x + w, x === -11 ? -96 : -64],
            [x + w / 2, x === -11 ? -108 : -84],
          ],
          p.surf(rgb('#f4f8ff'), 1.05),
          ' fill-opacity="0.85"',
        ),
      );
    }
  }
  return { body: parts.join(''), height: 122 };
}

function boat(p: Painter, o: DrawOptions): Drawing {
  const hull = o.colour ?? o.rng.pick([rgb('#f2efe8'), rgb('#b8322c'), rgb('#2d4f8a'), rgb('#8a5a34')]);
  const sail = rgb('#f8f3e6');
  const parts = [
    rect(-1.4, -98, 2.8, 86, p.surf(rgb('#5b4632'))),
    path('M2,-95 L2,-20 L42,-20 Q30,-58 2,-95 Z', p.lit(sail, o.fromLeft)),
    path('M-2,-88 L-2,-22 L-34,-22 Q-19,-56 -2,-88 Z', p.lit(mix(sail, rgb('#e9dcc0'), 0.5), o.fromLeft)),
    poly(
      [
        [1.4, -98],
        [12, -95],
        [1.4, -92],
      ],
      p.emit(rgb('#d23a2e')),
    ),
    path('M-46,-16 Q0,-12 46,-18 L36,3 Q0,6 -34,3 Z', p.lit(hull, o.fromLeft)),
    path('M-45,-15 Q0,-11 45,-17 L44,-14 Q0,-8 -44,-12 Z', p.surf(mix(hull, DARK, 0.5))),
  ];
  return { body: parts.join(''), height: 100 };
}

function ship(p: Painter, o: DrawOptions): Drawing {
  const hull = o.colour ?? o.rng.pick([rgb('#2a2f3a'), rgb('#8a2a25'), rgb('#1f3a5a')]);
  const parts = [
    circle(18, -86, 7, p.surf(rgb('#c9ccd2')), ' fill-opacity="0.55"'),
    circle(28, -94, 9, p.surf(rgb('#c9ccd2')), ' fill-opacity="0.4"'),
    circle(40, -100, 11, p.surf(rgb('#c9ccd2')), ' fill-opacity="0.25"'),
    rect(6, -76, 12, 26, p.lit(rgb('#c23a2e'), o.fromLeft)),
    rect(6, -76, 12, 5, p.surf(DARK)),
    rect(-36, -38, 64, 20, p.lit(WHITE, o.fromLeft)),
    rect(-22, -52, 32, 15, p.lit(WHITE, o.fromLeft)),
  ];
  for (let x = -32; x < 24; x += 7) parts.push(rect(x, -32, 4, 4, windowFill(p, o, (x + 32) % 14 === 0)));
  for (let x = -18; x < 8; x += 6) parts.push(rect(x, -48, 4, 5, windowFill(p, o, true)));
  parts.push(path('M-72,-20 L72,-24 L60,3 L-62,3 Z', p.lit(hull, o.fromLeft)));
  parts.push(path('M-72,-20 L72,-24 L71,-20 L-71,-16 Z', p.surf(WHITE)));
  return { body: parts.join(''), height: 100 };
}

function car(p: Painter, o: DrawOptions): Drawing {
  const paint = o.colour ?? o.rng.pick([rgb('#c8322b'), rgb('#2f63c8'), rgb('#e8b52a'), rgb('#2e2e34'), rgb('#e8e8e4')]);
  const parts = [
    path(
      'M-48,-12 L-48,-22 Q-46,-28 -36,-29 L-24,-30 L-12,-43 Q-8,-46 -2,-46 L18,-46 Q25,-46 29,-41 L38,-30 L46,-28 Q50,-26 50,-20 L50,-12 Z',
      p.lit(paint, o.fromLeft),
    ),
    path('M-20,-31 L-10,-42 L3,-42 L3,-31 Z', p.surf(GLASS)),
    path('M7,-31 L7,-42 L18,-42 Q22,-42 25,-38 L30,-31 Z', p.surf(GLASS)),
    rect(-48, -19, 98, 2, p.surf(paint, 0.6)),
  ];
  for (const x of [-30, 32]) {
    parts.push(circle(x, -11, 10.5, p.surf(rgb('#1c1c20'))));
    parts.push(circle(x, -11, 4.5, p.surf(rgb('#b8bcc4'))));
  }
  parts.push(o.lightsOn ? circle(-47, -23, 9, p.glow(p.emit(rgb('#fff4c4')), 0.9)) : rect(-49, -25, 3, 4, p.surf(rgb('#f4f0d8'))));
  parts.push(rect(48, -25, 2.5, 4, p.emit(rgb('#d02a24'))));
  return { body: parts.join(''), height: 46 };
}

function cat(p: Painter, o: DrawOptions): Drawing {
  const fur = o.colour ?? o.rng.pick([rgb('#3a3a40'), rgb('#d8843a'), rgb('#8a8a90'), rgb('#efe9df'), rgb('#6a4a34')]);
  const fill = p.lit(fur, o.fromLeft);
  const eye = o.night ? p.emit(rgb('#d8ff6a')) : p.surf(rgb('#c9e06a'));
  const parts = [
    `<path d="M14,-4 C34,-4 38,-24 28,-38" stroke="${fill}" stroke-width="6" stroke-linecap="round" fill="none"/>`,
    path('M-18,0 C-22,-20 -16,-40 -4,-44 C10,-46 18,-32 19,-14 C20,-6 17,0 13,0 Z', fill),
    circle(-6, -52, 14, fill),
    poly(
      [
        [-19, -56],
        [-16, -72],
        [-8, -63],
      ],
      fill,
    ),
    poly(
      [
        [-4, -64],
        [4, -72],
        [6, -55],
      ],
      fill,
    ),
    poly(
      [
        [-16.5, -60],
        [-15.5, -67],
        [-11, -62],
      ],
      p.surf(rgb('#e8a0a8')),
    ),
    ellipse(-11, -53, 2.2, 3, eye),
    ellipse(0, -53, 2.2, 3, eye),
    ellipse(-11, -53, 0.7, 2.4, p.surf(DARK)),
    ellipse(0, -53, 0.7, 2.4, p.surf(DARK)),
    poly(
      [
        [-7.5, -47.5],
        [-3.5, -47.5],
        [-5.5, -45.5],
      ],
      p.surf(rgb('#d07a84')),
    ),
    `<path d="M-10,0 V-12 M-2,0 V-12" stroke="${p.surf(fur, 0.55)}" stroke-width="1.2"/>`,
  ];
  return { body: parts.join(''), height: 72 };
}

function dogLike(p: Painter, o: DrawOptions, fox: boolean): Drawing {
  const fur = o.colour ?? (fox ? rgb('#d8692a') : o.rng.pick([rgb('#c8965a'), rgb('#6a4a32'), rgb('#efe6d6'), rgb('#2e2a28')]));
  const fill = p.lit(fur, o.fromLeft);
  const sock = fox ? rgb('#2a2220') : mix(fur, DARK, 0.25);
  const white = p.surf(rgb('#f2eee6'));
  const leg = fox ? 16 : 19;
  const parts: string[] = [];
  // Far-side legs first, a shade darker.
  parts.push(rect(-9, -leg - 2, 5, leg + 2, p.surf(sock, 0.7)), rect(19, -leg - 2, 5, leg + 2, p.surf(sock, 0.7)));
  if (fox) {
    parts.push(path('M20,-30 C38,-44 60,-38 68,-20 C70,-10 64,-4 56,-6 C48,-14 36,-20 20,-18 Z', fill));
    parts.push(path('M68,-20 C70,-10 64,-4 56,-6 C59,-9 61,-14 62,-19 Z', white));
  } else {
    parts.push(`<path d="M24,-34 Q38,-42 36,-54" stroke="${fill}" stroke-width="4.5" stroke-linecap="round" fill="none"/>`);
  }
  parts.push(ellipse(4, -leg - 9, 28, fox ? 11.5 : 13, fill));
  parts.push(rect(-17, -leg - 2, 5.5, leg + 2, p.lit(sock, o.fromLeft)), rect(12, -leg - 2, 5.5, leg + 2, p.lit(sock, o.fromLeft)));
  parts.push(path('M-14,-36 L-24,-52 L-10,-56 L-2,-34 Z', fill));
  parts.push(circle(-20, -53, fox ? 9 : 10.5, fill));
  if (fox) {
    parts.push(path('M-26,-58 L-43,-50 L-26,-46 Z', fill));
    parts.push(path('M-27,-50 L-43,-50 L-26,-46 Z', white));
    parts.push(
      poly(
        [
          [-28, -58],
          [-28, -73],
          [-19, -61],
        ],
        fill,
      ),
      poly(
        [
          [-19, -60],
          [-12, -72],
          [-11, -56],
        ],
        fill,
      ),
    );
    parts.push(
      poly(
        [
          [-26.5, -61],
          [-26.5, -69],
          [-22, -62],
        ],
        p.surf(DARK),
      ),
      poly(
        [
          [-17, -60],
          [-13, -67],
          [-13, -58],
        ],
        p.surf(DARK),
      ),
    );
    parts.push(path('M-16,-44 C-12,-40 -8,-36 -6,-30 L-14,-28 C-18,-34 -20,-40 -16,-44 Z', white));
    parts.push(circle(-42.5, -50, 1.7, p.surf(DARK)));
  } else {
    parts.push(ellipse(-31, -50, 9.5, 6.5, fill));
    parts.push(path('M-18,-62 C-10,-62 -8,-52 -12,-42 C-16,-46 -18,-54 -18,-62 Z', p.surf(fur, 0.7)));
    parts.push(circle(-40, -51, 2.6, p.surf(DARK)));
  }
  parts.push(circle(-23, -55, 1.5, o.night ? p.emit(rgb('#e8f08a')) : p.surf(DARK)));
  return { body: parts.join(''), height: 74 };
}

function bird(p: Painter, o: DrawOptions): Drawing {
  const shade = o.colour ?? (o.lightsOn ? rgb('#1c1a24') : rgb('#2e2c36'));
  const up = o.rng.range(-6, 4);
  return {
    body: path(`M-26,${n(-4 + up)} Q-13,-14 -2,-3 L0,0 L2,-3 Q13,-14 26,${n(-4 + up)} Q13,-8 2,2 L0,4 L-2,2 Q-13,-8 -26,${n(-4 + up)} Z`, p.surf(shade, 1)),
    height: 18,
  };
}

function fish(p: Painter, o: DrawOptions): Drawing {
  const scale = o.colour ?? o.rng.pick([rgb('#f08a2a'), rgb('#e8c23a'), rgb('#4ab0d8'), rgb('#e05a4a'), rgb('#9a6ad8')]);
  const fill = p.lit(scale, o.fromLeft);
  const parts = [
    poly(
      [
        [20, -12],
        [36, -24],
        [32, -12],
        [36, 0],
      ],
      p.surf(scale, 0.8),
    ),
    path('M-26,-12 C-18,-26 10,-28 22,-12 C10,2 -18,2 -26,-12 Z', fill),
    path('M-4,-22 L6,-30 L10,-21 Z', p.surf(scale, 0.8)),
    `<path d="M-8,-23 C-4,-16 -4,-8 -8,-2 M2,-24 C6,-16 6,-8 2,-1" stroke="${p.surf(scale, 0.7)}" stroke-width="1.2" fill="none"/>`,
    circle(-17, -14, 2.6, p.surf(WHITE)),
    circle(-17.5, -14, 1.4, p.surf(DARK)),
  ];
  return { body: parts.join(''), height: 30 };
}

function whale(p: Painter, o: DrawOptions): Drawing {
  const skin = o.colour ?? rgb('#4a5f7a');
  const parts = [
    `<path d="M-44,-30 C-48,-44 -40,-58 -44,-70 M-44,-30 C-38,-44 -30,-52 -28,-64 M-44,-30 C-50,-42 -56,-50 -60,-60" stroke="${p.surf(rgb('#eef6ff'))}" stroke-width="2.4" stroke-linecap="round" fill="none" stroke-opacity="0.85"/>`,
    path('M-70,0 C-70,-22 -50,-30 -20,-30 C20,-30 50,-20 64,-6 L80,-22 L84,-18 L74,-2 L88,6 L84,9 L62,2 C40,6 -40,8 -70,0 Z', p.lit(skin, o.fromLeft)),
    path('M-66,-4 C-40,4 20,6 56,0 C20,10 -40,10 -66,-4 Z', p.surf(mix(skin, WHITE, 0.5))),
    circle(-52, -12, 1.8, p.surf(DARK)),
  ];
  return { body: parts.join(''), height: 70 };
}

function flower(p: Painter, o: DrawOptions): Drawing {
  const petal = o.colour ?? o.rng.pick([rgb('#e8405a'), rgb('#f2c230'), rgb('#f08ab8'), rgb('#9a5ad8'), rgb('#f4f2ec'), rgb('#f07a2a')]);
  const parts = [
    `<path d="M0,0 C2,-20 -3,-40 0,-58" stroke="${p.surf(rgb('#3e7a34'))}" stroke-width="2.6" fill="none"/>`,
    path('M0,-20 C8,-30 18,-28 22,-24 C14,-18 6,-18 0,-20 Z', p.surf(rgb('#4a8a3a'))),
    path('M0,-32 C-8,-42 -18,-40 -21,-36 C-13,-30 -6,-30 0,-32 Z', p.surf(rgb('#3e7a34'))),
  ];
  const petals = 7;
  for (let i = 0; i < petals; i += 1) {
    const a = (360 / petals) * i;
    parts.push(ellipse(0, -70, 6, 12, p.lit(petal, o.fromLeft), ` transform="rotate(${n(a)} 0 -60)"`));
  }
  parts.push(circle(0, -60, 6.5, p.surf(rgb('#f2b020'), 0.9)), circle(-1.5, -61.5, 2.5, p.surf(rgb('#ffe070')), ' fill-opacity="0.8"'));
  return { body: parts.join(''), height: 82 };
}

function tower(p: Painter, o: DrawOptions): Drawing {
  const stone = o.colour ?? rgb('#b9ae9a');
  const roof = rgb('#7a2f3a');
  const parts = [
    poly(
      [
        [-15, 0],
        [15, 0],
        [12, -72],
        [-12, -72],
      ],
      p.lit(stone, o.fromLeft),
    ),
    rect(-15, -78, 30, 7, p.lit(stone, o.fromLeft)),
    poly(
      [
        [-17, -78],
        [17, -78],
        [0, -108],
      ],
      p.lit(roof, o.fromLeft),
    ),
    `<path d="M0,-108 V-118" stroke="${p.surf(DARK)}" stroke-width="0.8"/>`,
    poly(
      [
        [0, -118],
        [9, -115],
        [0, -112],
      ],
      p.emit(rgb('#d2a83a')),
    ),
    circle(0, -62, 5, p.surf(WHITE)),
    `<path d="M0,-62 V-65.5 M0,-62 L2.5,-60.5" stroke="${p.surf(DARK)}" stroke-width="0.8"/>`,
    path('M-5,0 V-10 A5,5 0 0 1 5,-10 V0 Z', p.surf(rgb('#3a2a20'))),
  ];
  for (const y of [-26, -44]) parts.push(rect(-2, y, 4, 8, windowFill(p, o, y === -26), ' rx="2"'));
  for (let y = -12; y > -72; y -= 12) parts.push(`<path d="M-14,${y} H14" stroke="${p.surf(stone, 0.75)}" stroke-width="0.5"/>`);
  return { body: parts.join(''), height: 118 };
}

export function windmillBlades(p: Painter, angle: number): string {
  const { x, y } = ANCHORS.windmillHub;
  const wood = p.surf(rgb('#6a5038'));
  const cloth = p.surf(rgb('#efe6d2'));
  const parts: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const a = angle + i * 90;
    parts.push(
      `<g transform="rotate(${n(a)} ${x} ${y})">${rect(x - 1.2, y - ANCHORS.windmillBladeLength, 2.4, ANCHORS.windmillBladeLength, wood)}` +
        `${rect(x + 1.2, y - ANCHORS.windmillBladeLength + 2, 9, ANCHORS.windmillBladeLength - 12, cloth)}</g>`,
    );
  }
  parts.push(circle(x, y, 3, p.surf(DARK)));
  return parts.join('');
}

function windmill(p: Painter, o: DrawOptions): Drawing {
  const body = o.colour ?? o.rng.pick([rgb('#efe8dc'), rgb('#b86a44'), rgb('#8a7a6a')]);
  const parts = [
    poly(
      [
        [-16, 0],
        [16, 0],
        [9, -62],
        [-9, -62],
      ],
      p.lit(body, o.fromLeft),
    ),
    path('M-11,-62 Q0,-80 11,-62 Z', p.lit(rgb('#4a3a30'), o.fromLeft)),
    path('M-5,0 V-12 A5,5 0 0 1 5,-12 V0 Z', p.surf(rgb('#4a2e1e'))),
    rect(-2.5, -40, 5, 7, windowFill(p, o, true)),
  ];
  if (o.bladeAngle !== null) parts.push(windmillBlades(p, o.bladeAngle));
  return { body: parts.join(''), height: 118 };
}

function robot(p: Painter, o: DrawOptions): Drawing {
  const metal = o.colour ?? rgb('#a8b2be');
  const fill = p.lit(metal, o.fromLeft);
  const eye = p.emit(rgb('#46e8ff'));
  const parts = [
    `<path d="M0,-92 V-100" stroke="${p.surf(DARK)}" stroke-width="1.5"/>`,
    circle(0, -101, 2.6, p.emit(rgb('#ff4a3a'))),
    rect(-14, -92, 28, 20, fill, ' rx="4"'),
    rect(-10, -86, 20, 8, p.surf(rgb('#1a2028')), ' rx="3"'),
    circle(-5, -82, 2.6, eye),
    circle(5, -82, 2.6, eye),
    rect(-4, -73, 8, 4, p.surf(metal, 0.6)),
    rect(-19, -70, 38, 36, fill, ' rx="5"'),
    rect(-10, -62, 20, 14, p.surf(rgb('#2a3038')), ' rx="2"'),
    circle(-5, -55, 2, p.emit(rgb('#6aff8a'))),
    circle(1, -55, 2, p.emit(rgb('#ffd23a'))),
    circle(7, -55, 2, p.emit(rgb('#ff5a5a'))),
    rect(-27, -68, 7, 28, fill, ' rx="3"'),
    rect(20, -68, 7, 28, fill, ' rx="3"'),
    path('M-28,-40 h9 v4 h-3 v3 h-3 v-3 h-3 Z', p.surf(metal, 0.7)),
    path('M19,-40 h9 v4 h-3 v3 h-3 v-3 h-3 Z', p.surf(metal, 0.7)),
    rect(-14, -34, 10, 28, fill, ' rx="2"'),
    rect(4, -34, 10, 28, fill, ' rx="2"'),
    rect(-17, -7, 15, 7, p.surf(metal, 0.55), ' rx="2"'),
    rect(2, -7, 15, 7, p.surf(metal, 0.55), ' rx="2"'),
  ];
  return { body: parts.join(''), height: 104 };
}

function rocket(p: Painter, o: DrawOptions): Drawing {
  const hullColour = o.colour ?? WHITE;
  const red = rgb('#c8322b');
  const parts = [
    path('M-9,8 C-10,30 -4,48 0,62 C4,48 10,30 9,8 Z', p.emit(rgb('#ff7a2a')), ' fill-opacity="0.95"'),
    path('M-5,8 C-6,24 -2,36 0,46 C2,36 6,24 5,8 Z', p.emit(rgb('#fff0a0'))),
    circle(0, 20, 26, p.glow(p.emit(rgb('#ffb050')), 0.6)),
    path('M-14,-30 L-27,-4 L-27,8 L-14,-6 Z', p.lit(red, o.fromLeft)),
    path('M14,-30 L27,-4 L27,8 L14,-6 Z', p.lit(red, o.fromLeft)),
    path('M0,-100 C12,-84 14,-60 14,-30 L14,8 L-14,8 L-14,-30 C-14,-60 -12,-84 0,-100 Z', p.lit(hullColour, o.fromLeft)),
    path('M0,-100 C8,-90 11,-80 12,-72 L-12,-72 C-11,-80 -8,-90 0,-100 Z', p.lit(red, o.fromLeft)),
    circle(0, -52, 7.5, p.surf(rgb('#50565e'))),
    circle(0, -52, 5.5, p.surf(GLASS, 1.1)),
    rect(-3, -6, 6, 20, p.surf(red, 0.8)),
  ];
  return { body: parts.join(''), height: 100 };
}

function balloon(p: Painter, o: DrawOptions): Drawing {
  const [a, b] = o.colour
    ? [o.colour, rgb('#f4e8cf')]
    : o.rng.pick([
        [rgb('#d8322a'), rgb('#f2c230')],
        [rgb('#2f63c8'), rgb('#f4f0e4')],
        [rgb('#e8782a'), rgb('#7a3fb0')],
        [rgb('#3f9a45'), rgb('#f2c230')],
      ] as Array<[Rgb, Rgb]>);
  const env = 'M0,-100 C30,-100 38,-70 30,-52 C24,-38 10,-30 8,-26 L-8,-26 C-10,-30 -24,-38 -30,-52 C-38,-70 -30,-100 0,-100 Z';
  const parts = [
    path(env, p.lit(a, o.fromLeft)),
    `<path d="${env}" transform="scale(0.62 1)" fill="${p.lit(b, o.fromLeft)}"/>`,
    `<path d="${env}" transform="scale(0.24 1)" fill="${p.lit(a, o.fromLeft)}"/>`,
    path('M-30,-52 C-20,-46 20,-46 30,-52 C26,-44 -26,-44 -30,-52 Z', p.surf(b, 0.85)),
    `<path d="M-8,-26 L-6,-12 M8,-26 L6,-12 M-2,-26 L-2,-12 M2,-26 L2,-12" stroke="${p.surf(rgb('#5a4a3a'))}" stroke-width="0.8"/>`,
    rect(-7, -12, 14, 12, p.lit(rgb('#8a5a30'), o.fromLeft), ' rx="1.5"'),
  ];
  if (o.lightsOn) parts.push(circle(0, -24, 7, p.glow(p.emit(rgb('#ffb040')), 0.9)));
  return { body: parts.join(''), height: 100 };
}

function person(p: Painter, o: DrawOptions): Drawing {
  const coat = o.colour ?? o.rng.pick([rgb('#c8322b'), rgb('#2f63c8'), rgb('#e8b52a'), rgb('#3f7a45'), rgb('#6a4a8a')]);
  const skin = o.rng.pick([rgb('#f0c8a0'), rgb('#c89068'), rgb('#8a5a3a'), rgb('#e8b890')]);
  const hair = o.rng.pick([rgb('#2a1e16'), rgb('#6a4020'), rgb('#c89a50'), rgb('#1a1a1e')]);
  const trousers = rgb('#2a3040');
  const parts = [
    rect(-8.5, -40, 7, 38, p.lit(trousers, o.fromLeft)),
    rect(1.5, -40, 7, 38, p.lit(trousers, o.fromLeft)),
    ellipse(-5, -1.5, 5, 2.2, p.surf(DARK)),
    ellipse(5, -1.5, 5, 2.2, p.surf(DARK)),
    path('M-13,-76 C-15,-60 -15,-48 -13,-36 L13,-36 C15,-48 15,-60 13,-76 C6,-80 -6,-80 -13,-76 Z', p.lit(coat, o.fromLeft)),
    path('M-13,-74 C-18,-62 -19,-52 -18,-42 L-14,-42 C-14,-52 -13,-62 -10,-70 Z', p.lit(coat, o.fromLeft)),
    path('M13,-74 C18,-62 19,-52 18,-42 L14,-42 C14,-52 13,-62 10,-70 Z', p.lit(coat, o.fromLeft)),
    circle(-16, -40, 2.6, p.surf(skin)),
    circle(16, -40, 2.6, p.surf(skin)),
    rect(-3, -82, 6, 5, p.surf(skin, 0.85)),
    circle(0, -89, 8, p.lit(skin, o.fromLeft)),
    path('M-8.5,-89 C-9,-99 9,-99 8.5,-89 C8,-85 6,-84 6,-86 C4,-93 -4,-93 -6,-86 C-6,-84 -8,-85 -8.5,-89 Z', p.surf(hair)),
  ];
  return { body: parts.join(''), height: 97 };
}

function snowman(p: Painter, o: DrawOptions): Drawing {
  const snow = rgb('#f6f8fc');
  const parts = [
    `<path d="M-12,-50 L-30,-66 M-25,-61 L-30,-58 M12,-50 L30,-64 M25,-60 L31,-61" stroke="${p.surf(rgb('#5a3a22'))}" stroke-width="1.8" stroke-linecap="round"/>`,
    circle(0, -20, 21, p.lit(snow, o.fromLeft)),
    circle(0, -53, 15, p.lit(snow, o.fromLeft)),
    circle(0, -78, 11, p.lit(snow, o.fromLeft)),
    path('M-11,-68 C-4,-64 4,-64 11,-68 L12,-63 C4,-60 -4,-60 -12,-63 Z', p.lit(o.colour ?? rgb('#c8322b'), o.fromLeft)),
    rect(6, -66, 5, 12, p.surf(o.colour ?? rgb('#c8322b'), 0.85)),
    rect(-12, -89, 24, 3, p.surf(DARK)),
    rect(-8, -104, 16, 16, p.surf(DARK)),
    circle(-4, -80, 1.4, p.surf(DARK)),
    circle(4, -80, 1.4, p.surf(DARK)),
    poly(
      [
        [-1, -77],
        [-1, -74],
        [-14, -75],
      ],
      p.surf(rgb('#ee7a22')),
    ),
    circle(0, -54, 1.6, p.surf(DARK)),
    circle(0, -46, 1.6, p.surf(DARK)),
    circle(0, -28, 1.8, p.surf(DARK)),
  ];
  return { body: parts.join(''), height: 104 };
}

function cactus(p: Painter, o: DrawOptions): Drawing {
  const green = o.colour ?? rgb('#4f8a4a');
  const fill = p.lit(green, o.fromLeft);
  const parts = [
    rect(-9, -100, 18, 100, fill, ' rx="9"'),
    path('M-9,-42 H-20 Q-28,-42 -28,-50 V-72 Q-28,-78 -23,-78 Q-18,-78 -18,-72 V-52 H-9 Z', fill),
    path('M9,-56 H19 Q27,-56 27,-64 V-80 Q27,-86 22,-86 Q17,-86 17,-80 V-66 H9 Z', fill),
    `<path d="M-3,-96 V-4 M3,-96 V-4" stroke="${p.surf(green, 0.7)}" stroke-width="0.8"/>`,
  ];
  return { body: parts.join(''), height: 100 };
}

function tent(p: Painter, o: DrawOptions): Drawing {
  const cloth = o.colour ?? o.rng.pick([rgb('#e8782a'), rgb('#3f8a5a'), rgb('#c8322b'), rgb('#e8c23a')]);
  const parts = [
    `<path d="M-44,0 L-30,-30 M44,0 L30,-30" stroke="${p.surf(rgb('#d8d0c0'))}" stroke-width="0.6"/>`,
    poly(
      [
        [-40, 0],
        [0, -56],
        [40, 0],
      ],
      p.lit(cloth, o.fromLeft),
    ),
    poly(
      [
        [0, -56],
        [40, 0],
        [52, -2],
        [14, -54],
      ],
      p.surf(cloth, 0.7),
    ),
    poly(
      [
        [-11, 0],
        [0, -34],
        [11, 0],
      ],
      o.lightsOn ? p.emit(rgb('#ffc25a')) : p.surf(rgb('#2a2018')),
    ),
    `<path d="M0,-56 V-62" stroke="${p.surf(DARK)}" stroke-width="1.2"/>`,
  ];
  if (o.lightsOn) parts.push(circle(0, -10, 30, p.glow(p.emit(rgb('#ffb040')), 0.4)));
  return { body: parts.join(''), height: 62 };
}

function campfire(p: Painter, _o: DrawOptions): Drawing {
  const stone = rgb('#7a7a80');
  const parts = [
    ellipse(0, -4, 70, 18, p.glow(p.emit(rgb('#ff9a3a')), 0.55)),
    `<g transform="rotate(-14 0 -4)">${rect(-26, -8, 52, 8, p.surf(rgb('#6a4022')), ' rx="4"')}</g>`,
    `<g transform="rotate(14 0 -4)">${rect(-26, -8, 52, 8, p.surf(rgb('#5a361c')), ' rx="4"')}</g>`,
    path('M-16,-6 C-22,-28 -6,-36 -4,-60 C4,-44 22,-36 16,-6 Z', p.emit(rgb('#e8401a'))),
    path('M-11,-6 C-14,-22 -2,-28 0,-46 C6,-32 16,-24 11,-6 Z', p.emit(rgb('#ff8a1a'))),
    path('M-6,-6 C-8,-16 0,-20 1,-30 C5,-20 10,-14 6,-6 Z', p.emit(rgb('#ffe27a'))),
    circle(6, -70, 1.2, p.emit(rgb('#ffb04a'))),
    circle(-8, -78, 1, p.emit(rgb('#ffb04a'))),
    circle(2, -86, 0.8, p.emit(rgb('#ffb04a'))),
  ];
  for (const x of [-30, -18, 18, 30]) parts.push(ellipse(x, -3, 7, 5, p.surf(stone)));
  return { body: parts.join(''), height: 86 };
}

function planet(p: Painter, o: DrawOptions): Drawing {
  const body = o.colour ?? o.rng.pick([rgb('#d8a86a'), rgb('#c86a4a'), rgb('#6a9ad8'), rgb('#b89ad8')]);
  const id = p.linear(
    [
      [0, p.surf(body, 1.3)],
      [0.6, p.surf(body, 0.9)],
      [1, p.surf(body, 0.25)],
    ],
    o.fromLeft ? 0 : 1,
    0,
    o.fromLeft ? 1 : 0,
    0.4,
  );
  const ring = p.surf(mix(body, WHITE, 0.4), 1.1);
  const parts = [
    `<ellipse cx="0" cy="-50" rx="62" ry="14" fill="none" stroke="${ring}" stroke-width="5" stroke-opacity="0.8" transform="rotate(-14 0 -50)"/>`,
    circle(0, -50, 36, id),
    `<path d="M-34,-58 Q0,-62 34,-56 M-35,-44 Q0,-40 35,-46" stroke="${p.surf(body, 0.7)}" stroke-width="3" fill="none" stroke-opacity="0.5"/>`,
    `<path d="M-62,-50 A62,14 0 0 0 62,-50" fill="none" stroke="${ring}" stroke-width="5" stroke-opacity="0.9" transform="rotate(-14 0 -50)"/>`,
  ];
  return { body: parts.join(''), height: 100 };
}

type DrawFn = (p: Painter, o: DrawOptions) => Drawing;

const DRAW: Partial<Record<SubjectKind, DrawFn>> = {
  lighthouse,
  house,
  tree,
  pine,
  castle,
  boat,
  ship,
  car,
  cat,
  dog: (p, o) => dogLike(p, o, false),
  fox: (p, o) => dogLike(p, o, true),
  bird,
  fish,
  whale,
  flower,
  tower,
  windmill,
  robot,
  rocket,
  balloon,
  person,
  snowman,
  cactus,
  tent,
  campfire,
  planet,
};

/** Draws one subject in local units, or undefined for kinds the scene draws itself (sun, moon, city, bridge, mountain). */
export function drawSubject(kind: SubjectKind, p: Painter, o: DrawOptions): Drawing | undefined {
  return DRAW[kind]?.(p, o);
}
