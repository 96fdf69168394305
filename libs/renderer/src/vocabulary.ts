import { rgb, type Rgb } from './colour';

/**
 * The prompt interpreter: a fixed vocabulary matched word by word.
 *
 * There is no model and no network. Prompt text is only ever compared against
 * the tables below; what comes out is a small typed description of the scene,
 * so no part of the prompt can reach the SVG or ffmpeg as text.
 */

export const SUBJECTS = [
  'lighthouse',
  'house',
  'tree',
  'pine',
  'mountain',
  'castle',
  'boat',
  'ship',
  'car',
  'cat',
  'dog',
  'fox',
  'bird',
  'fish',
  'whale',
  'flower',
  'sun',
  'moon',
  'city',
  'bridge',
  'tower',
  'windmill',
  'robot',
  'rocket',
  'balloon',
  'person',
  'snowman',
  'cactus',
  'tent',
  'campfire',
  'planet',
] as const;
export type SubjectKind = (typeof SUBJECTS)[number];

export const SETTINGS = ['sea', 'beach', 'lake', 'desert', 'snowfield', 'forest', 'city', 'space', 'meadow', 'mountains', 'underwater'] as const;
export type SettingKind = (typeof SETTINGS)[number];

export const TIMES = ['dawn', 'morning', 'noon', 'dusk', 'night'] as const;
export type TimeOfDay = (typeof TIMES)[number];

export type Weather = 'cloudy' | 'storm' | 'fog' | 'rain' | 'snow';
export type Style = 'natural' | 'neon' | 'pastel' | 'monochrome' | 'sepia' | 'vivid';
export type Framing = 'close' | 'medium' | 'wide';
export type Side = 'left' | 'centre' | 'right';
export type Pedestal = 'peak' | 'hill' | 'rocks';

/** Adjustments an edit can ask for; see {@link interpretEdit}. */
export type Grade =
  'sunset' | 'night' | 'dawn' | 'day' | 'bw' | 'sepia' | 'warmer' | 'cooler' | 'brighter' | 'darker' | 'neon' | 'pastel' | 'vivid' | 'fog' | 'storm';

type Entry =
  | { t: 'subject'; v: SubjectKind }
  | { t: 'setting'; v: SettingKind }
  | { t: 'time'; v: TimeOfDay }
  | { t: 'weather'; v: Weather }
  | { t: 'style'; v: Exclude<Style, 'natural'> }
  | { t: 'framing'; v: Framing }
  | { t: 'side'; v: Side }
  | { t: 'count'; v: number }
  | { t: 'colour'; v: Rgb }
  | { t: 'mood'; v: 'calm' | 'rough' | 'dark' | 'bright' | 'warm' | 'cool' }
  | { t: 'snowy' }
  | { t: 'on' }
  | { t: 'blur' }
  | { t: 'background' };

const lexicon = new Map<string, Entry>();
function add(entry: Entry, words: string): void {
  for (const w of words.split(',')) lexicon.set(w.trim(), entry);
}

// Subjects and their synonyms. Multi-word phrases are matched before single words.
add({ t: 'subject', v: 'lighthouse' }, 'lighthouse,beacon,light house');
add({ t: 'subject', v: 'house' }, 'house,home,cottage,cabin,hut,barn,farmhouse,villa,chalet,shack,lodge');
add({ t: 'subject', v: 'tree' }, 'tree,oak,maple,birch,willow,elm,apple tree,palm,palm tree');
add({ t: 'subject', v: 'pine' }, 'pine,fir,spruce,evergreen,conifer,christmas tree,pine tree');
add({ t: 'subject', v: 'mountain' }, 'mountain,peak,volcano,summit');
add({ t: 'subject', v: 'castle' }, 'castle,palace,fortress,citadel,fort,kingdom');
add({ t: 'subject', v: 'boat' }, 'boat,sailboat,sail boat,yacht,sailing boat,dinghy,canoe,rowboat,sail,sailing ship,schooner,paper boat');
add({ t: 'subject', v: 'ship' }, 'ship,steamship,ferry,liner,tanker,freighter,steamer,vessel,cruise ship,tugboat');
add({ t: 'subject', v: 'car' }, 'car,automobile,taxi,truck,van,jeep,auto,sports car,bus');
add({ t: 'subject', v: 'cat' }, 'cat,kitten,kitty,tabby,lion,tiger');
add({ t: 'subject', v: 'dog' }, 'dog,puppy,pup,hound,retriever,terrier,labrador,poodle');
add({ t: 'subject', v: 'fox' }, 'fox,wolf,coyote,jackal');
add({ t: 'subject', v: 'bird' }, 'bird,seagull,gull,eagle,crow,raven,swallow,sparrow,hawk,dove,pigeon,owl,parrot,heron,flamingo,duck,swan');
add({ t: 'subject', v: 'fish' }, 'fish,goldfish,salmon,trout,koi,shark,dolphin,tuna');
add({ t: 'subject', v: 'whale' }, 'whale,orca');
add({ t: 'subject', v: 'flower' }, 'flower,rose,tulip,daisy,sunflower,poppy,lily,lotus,blossom,bloom,bouquet,lavender');
add({ t: 'subject', v: 'sun' }, 'sun,sunshine,sunlight');
add({ t: 'subject', v: 'moon' }, 'moon,full moon,crescent,moonlight,moonrise');
add({ t: 'subject', v: 'city' }, 'city,skyline,city skyline,skyscraper,building,metropolis,downtown,cityscape,skyscrapers');
add({ t: 'subject', v: 'bridge' }, 'bridge,golden gate,viaduct');
add({ t: 'subject', v: 'tower' }, 'tower,clock tower,spire,turret');
add({ t: 'subject', v: 'windmill' }, 'windmill,wind mill,mill,wind turbine');
add({ t: 'subject', v: 'robot' }, 'robot,android,droid,mech,cyborg,automaton');
add({ t: 'subject', v: 'rocket' }, 'rocket,spaceship,spacecraft,space shuttle,shuttle,missile');
add({ t: 'subject', v: 'balloon' }, 'balloon,hot air balloon,air balloon,blimp,zeppelin');
add(
  { t: 'subject', v: 'person' },
  'person,man,woman,girl,boy,child,kid,people,figure,hiker,traveler,traveller,wanderer,astronaut,knight,king,queen,princess,prince,wizard,lady,guy,fisherman,sailor,explorer',
);
add({ t: 'subject', v: 'snowman' }, 'snowman,snow man');
add({ t: 'subject', v: 'cactus' }, 'cactus,saguaro,cacti');
add({ t: 'subject', v: 'tent' }, 'tent,camp,campsite,camping');
add({ t: 'subject', v: 'campfire' }, 'campfire,bonfire,fire,fireplace,camp fire');
add({ t: 'subject', v: 'planet' }, 'planet,saturn,jupiter,mars,earth,globe');

add({ t: 'setting', v: 'sea' }, 'sea,ocean,coast,shore,seaside,harbour,harbor,bay,port,waves,wave,seascape,island,cliff,cliffs,coastline,marina,pier');
add({ t: 'setting', v: 'beach' }, 'beach,sand,sands,tropical,tropics,lagoon');
add({ t: 'setting', v: 'lake' }, 'lake,pond,river,water,loch,stream,canal,reflection,reflections,fjord');
add({ t: 'setting', v: 'desert' }, 'desert,dune,dunes,sahara,wasteland,canyon,savanna,savannah,mesa');
add({ t: 'setting', v: 'snowfield' }, 'arctic,tundra,glacier,iceberg,polar,antarctica,ice field,snowfield');
add({ t: 'setting', v: 'forest' }, 'forest,woods,wood,woodland,jungle,grove,trees,rainforest,taiga');
add({ t: 'setting', v: 'city' }, 'street,town,urban,village,road,alley,avenue,cyberpunk,plaza,square,neighborhood,neighbourhood');
add({ t: 'setting', v: 'space' }, 'space,galaxy,cosmos,universe,nebula,outer space,orbit,stars,starfield,asteroid');
add(
  { t: 'setting', v: 'meadow' },
  'meadow,field,fields,grass,grassland,farm,countryside,garden,park,prairie,valley,hill,hills,pasture,lawn,plain,plains,countryside,orchard,yard',
);
add({ t: 'setting', v: 'mountains' }, 'mountains,alps,range,mountain range,highlands,peaks,ridge,rocky,himalaya');
add({ t: 'setting', v: 'underwater' }, 'underwater,reef,coral,coral reef,seabed,sea floor,ocean floor,aquarium,undersea,deep sea');

add({ t: 'time', v: 'dawn' }, 'dawn,sunrise,daybreak,first light');
add({ t: 'time', v: 'morning' }, 'morning,early');
add({ t: 'time', v: 'noon' }, 'noon,midday,day,daytime,afternoon,daylight,sunny,summer');
add({ t: 'time', v: 'dusk' }, 'dusk,sunset,evening,twilight,golden hour,sundown,gloaming');
add({ t: 'time', v: 'night' }, 'night,midnight,nighttime,starry,moonlit,nocturnal,dark sky,tonight');

add({ t: 'weather', v: 'cloudy' }, 'cloud,clouds,cloudy,overcast,grey sky,gray sky');
add({ t: 'weather', v: 'storm' }, 'storm,stormy,thunder,thunderstorm,lightning,tempest,hurricane');
add({ t: 'weather', v: 'fog' }, 'fog,foggy,mist,misty,haze,hazy,smoke');
add({ t: 'weather', v: 'rain' }, 'rain,rainy,raining,rainfall,drizzle,downpour,wet,shower');
add({ t: 'weather', v: 'snow' }, 'snowing,snowfall,blizzard,snowflakes,snowflake,falling snow');
add({ t: 'snowy' }, 'snow,snowy,winter,frozen,frost,frosty,ice,icy,wintry');

add({ t: 'style', v: 'neon' }, 'neon,synthwave,vaporwave,glowing,glow,fluorescent,cyber,retrowave');
add({ t: 'style', v: 'pastel' }, 'pastel,soft,dreamy,gentle,pale,watercolor,watercolour');
add({ t: 'style', v: 'monochrome' }, 'monochrome,black and white,grayscale,greyscale,noir,b w,bw,mono,colorless,colourless,desaturated');
add({ t: 'style', v: 'sepia' }, 'sepia,vintage,retro,antique,nostalgic,faded,old photo');
add({ t: 'style', v: 'vivid' }, 'vivid,vibrant,colorful,colourful,saturated,bold,psychedelic,rainbow');

add({ t: 'framing', v: 'close' }, 'close up,closeup,close,portrait,macro,detail,zoomed in,near');
add({ t: 'framing', v: 'wide' }, 'wide,panorama,panoramic,landscape,vast,distant,far,aerial,wide angle');
add({ t: 'side', v: 'left' }, 'left');
add({ t: 'side', v: 'right' }, 'right');
add({ t: 'side', v: 'centre' }, 'centre,center,centered,centred,middle');

add({ t: 'count', v: 1 }, 'one,single,lone,lonely,solitary');
add({ t: 'count', v: 2 }, 'two,pair,couple,twin,twins,both');
add({ t: 'count', v: 3 }, 'three,few,trio');
add({ t: 'count', v: 4 }, 'four');
add({ t: 'count', v: 5 }, 'five,several,many,group,flock,herd,school,crowd,lots,dozen,dozens,pack,fleet,swarm,numerous,bunch');
add({ t: 'count', v: 6 }, 'six,seven,eight,nine,ten');

add({ t: 'mood', v: 'calm' }, 'calm,still,quiet,peaceful,serene,tranquil,mirror,glassy,placid');
add({ t: 'mood', v: 'rough' }, 'rough,choppy,wild,raging,crashing,turbulent');
add({ t: 'mood', v: 'dark' }, 'dark,darker,gloomy,moody,dim,dimmer,sombre,somber,ominous,spooky,eerie');
add({ t: 'mood', v: 'bright' }, 'bright,brighter,lighter,light,brighten,luminous,sunlit');
add({ t: 'mood', v: 'warm' }, 'warm,warmer,cozy,cosy,warmth,hot');
add({ t: 'mood', v: 'cool' }, 'cool,cooler,cold,colder,chilly,icy blue');

add({ t: 'on' }, 'on,atop,upon,top,perched');
add({ t: 'blur' }, 'blur,blurry,blurred,bokeh,defocus,defocused,depth of field,soften');
add({ t: 'background' }, 'background,backdrop,behind,surroundings,bg');

const COLOURS: Record<string, string> = {
  red: '#c8322b',
  crimson: '#a51c30',
  scarlet: '#d4261c',
  orange: '#e8782a',
  yellow: '#efc833',
  gold: '#d9a934',
  golden: '#d9a934',
  green: '#3f9a45',
  emerald: '#1f8a5b',
  blue: '#2f63c8',
  navy: '#1d2f6b',
  teal: '#1f8c8c',
  cyan: '#35c3d9',
  turquoise: '#2fbfb0',
  purple: '#7a3fb0',
  violet: '#8b55d6',
  pink: '#e77aa8',
  magenta: '#d43a9b',
  white: '#f2f2ee',
  black: '#1d1d22',
  brown: '#7b4f2c',
  silver: '#b8bcc4',
  grey: '#8a8d93',
  gray: '#8a8d93',
  ginger: '#d8742c',
  tan: '#c9a06a',
};
for (const [word, value] of Object.entries(COLOURS)) lexicon.set(word, { t: 'colour', v: rgb(value) });

/** "A red fox" or "a red cat" means ginger fur, not fire-engine red. */
function furColour(kind: SubjectKind, colour: Rgb): Rgb {
  const furry = kind === 'fox' || kind === 'cat' || kind === 'dog';
  return furry && colour.r > 150 && colour.g < 80 ? rgb('#d8692a') : colour;
}

/** Words that carry no scene meaning; excluded from the "unknown words" that seed free choices. */
const STOPWORDS = new Set(
  (
    'a,an,the,of,in,at,and,with,by,to,from,for,into,onto,under,near,through,across,along,its,it,is,are,this,that,' +
    'some,very,beautiful,picture,image,photo,photograph,painting,drawing,illustration,render,scene,view,art,style,' +
    'make,turn,add,put,place,insert,paint,draw,give,show,change,set,please,them,their,my,our,as,like,just,more,less,' +
    'lot,bit,slightly,little,big,large,huge,giant,tall,high,low,standing,sitting,flying,floating,sailing,running,' +
    'walking,against,between,beside,next,while,during,tiny,small'
  ).split(','),
);

/** What the interpreter understood about one subject mention. */
export interface SubjectMention {
  kind: SubjectKind;
  /** Explicit or implied count (plural nouns imply a few); 1 when nothing said. */
  count: number;
  /** Colour adjective that preceded the noun, if any ("a red car"). */
  colour?: Rgb;
  /** Set when the prompt puts the subject on a mountain, hill or rocks. */
  pedestal?: Pedestal;
}

/** Everything the vocabulary recognised in a prompt; anything unset is chosen from the seed later. */
export interface PromptMeaning {
  subjects: SubjectMention[];
  settings: SettingKind[];
  time?: TimeOfDay;
  weather: Weather[];
  snowy: boolean;
  style?: Exclude<Style, 'natural'>;
  moods: Array<'calm' | 'rough' | 'dark' | 'bright' | 'warm' | 'cool'>;
  framing?: Framing;
  side?: Side;
  blur: boolean;
  background: boolean;
  /** Words outside the vocabulary (lowercased), kept only to seed the free choices so unrelated prompts differ. */
  unknown: string[];
}

/** Prompts are capped before tokenising: the vocabulary cannot use more, and it bounds the work per request. */
const MAX_PROMPT_CHARS = 4000;
const MAX_COUNT = 6;

function tokenize(prompt: string): string[] {
  return String(prompt)
    .slice(0, MAX_PROMPT_CHARS)
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter((w) => w.length > 0);
}

/** Candidate singular forms of an English plural, most likely first. */
function singulars(word: string): string[] {
  const out: string[] = [];
  if (word.endsWith('ies') && word.length > 4) out.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('ves') && word.length > 4) out.push(`${word.slice(0, -3)}f`, `${word.slice(0, -3)}fe`);
  if (word.endsWith('es') && word.length > 3) out.push(word.slice(0, -2));
  if (word.endsWith('s') && !word.endsWith('ss') && word.length > 2) out.push(word.slice(0, -1));
  if (word === 'people' || word === 'men' || word === 'women' || word === 'children') out.push('person');
  if (word === 'geese') out.push('bird');
  if (word === 'mice') out.push('cat');
  return out;
}

function lookup(words: string[], i: number): { entry: Entry; length: number; plural: boolean } | undefined {
  for (const length of [3, 2, 1]) {
    if (i + length > words.length) continue;
    const phrase = words.slice(i, i + length).join(' ');
    const direct = lexicon.get(phrase);
    if (direct) return { entry: direct, length, plural: false };
    // Only the last word of a phrase takes a plural ending ("hot air balloons").
    const head = words.slice(i, i + length - 1);
    for (const single of singulars(words[i + length - 1] as string)) {
      const entry = lexicon.get([...head, single].join(' '));
      if (entry) return { entry, length, plural: entry.t === 'subject' };
    }
  }
  return undefined;
}

/** Subjects that read as a setting when the prompt puts something else on them. */
const PEDESTAL_WORDS: Record<string, Pedestal> = {
  mountain: 'peak',
  hill: 'hill',
  cliff: 'rocks',
  rock: 'rocks',
  rocks: 'rocks',
  island: 'rocks',
  hilltop: 'hill',
};

/**
 * Interprets a prompt against the vocabulary. Pure and deterministic; never throws.
 */
export function interpretPrompt(prompt: string): PromptMeaning {
  const words = tokenize(prompt);
  const meaning: PromptMeaning = { subjects: [], settings: [], weather: [], snowy: false, moods: [], blur: false, background: false, unknown: [] };
  let pendingCount: number | undefined;
  let pendingColour: Rgb | undefined;
  let pendingSince = 0;
  let lastOn = -10;

  for (let i = 0; i < words.length;) {
    const word = words[i] as string;
    // Pedestal phrases ("on a mountain", "atop a hill") attach to the subject already mentioned.
    const pedestal = PEDESTAL_WORDS[word] ?? PEDESTAL_WORDS[singulars(word)[0] ?? ''];
    if (pedestal !== undefined && i - lastOn <= 2 && meaning.subjects.length > 0) {
      const first = meaning.subjects[0] as SubjectMention;
      first.pedestal ??= pedestal;
      if (pedestal === 'peak') meaning.settings.push('mountains');
      if (pedestal === 'rocks' && !meaning.settings.includes('sea')) meaning.settings.push('sea');
      i += 1;
      continue;
    }
    const found = lookup(words, i);
    if (found === undefined) {
      if (/^\d+$/.test(word)) {
        pendingCount = Math.max(1, Math.min(MAX_COUNT, Number(word)));
        pendingSince = i;
      } else if (!STOPWORDS.has(word)) {
        meaning.unknown.push(word);
      }
      i += 1;
      continue;
    }
    const { entry } = found;
    switch (entry.t) {
      case 'subject': {
        const fresh = i - pendingSince <= 4;
        const count = Math.min(MAX_COUNT, (fresh ? pendingCount : undefined) ?? (found.plural ? 3 : 1));
        const existing = meaning.subjects.find((s) => s.kind === entry.v);
        if (existing) {
          existing.count = Math.max(existing.count, count);
        } else {
          const mention: SubjectMention = { kind: entry.v, count };
          if (fresh && pendingColour) mention.colour = furColour(entry.v, pendingColour);
          meaning.subjects.push(mention);
        }
        pendingCount = undefined;
        pendingColour = undefined;
        break;
      }
      case 'setting':
        if (!meaning.settings.includes(entry.v)) meaning.settings.push(entry.v);
        break;
      case 'time':
        meaning.time ??= entry.v;
        break;
      case 'weather':
        if (!meaning.weather.includes(entry.v)) meaning.weather.push(entry.v);
        break;
      case 'snowy':
        meaning.snowy = true;
        break;
      case 'style':
        meaning.style ??= entry.v;
        break;
      case 'framing':
        meaning.framing ??= entry.v;
        break;
      case 'side':
        meaning.side ??= entry.v;
        break;
      case 'count':
        pendingCount = entry.v;
        pendingSince = i;
        break;
      case 'colour':
        pendingColour = entry.v;
        pendingSince = i;
        break;
      case 'mood':
        if (!meaning.moods.includes(entry.v)) meaning.moods.push(entry.v);
        break;
      case 'on':
        lastOn = i;
        break;
      case 'blur':
        meaning.blur = true;
        break;
      case 'background':
        meaning.background = true;
        break;
    }
    i += found.length;
  }
  // A mountain or a city named beside another subject is where that subject is, not a second subject.
  for (const [kind, setting] of [
    ['mountain', 'mountains'],
    ['city', 'city'],
  ] as const) {
    const at = meaning.subjects.findIndex((s) => s.kind === kind);
    if (meaning.subjects.length > 1 && at >= 0) {
      meaning.subjects.splice(at, 1);
      if (!meaning.settings.includes(setting)) meaning.settings.push(setting);
    }
  }
  return meaning;
}

/** What an edit prompt asks for. */
export interface EditMeaning {
  /** Colour/light adjustments, in prompt order. */
  grades: Grade[];
  /** Subjects to paint in. */
  add: SubjectMention[];
  blurBackground: boolean;
  snow: boolean;
  rain: boolean;
  /** The prompt read as a scene description, used to fill transparent parts of the upload. */
  scene: PromptMeaning;
}

/**
 * Interprets an edit instruction ("make it sunset", "add a cat", "blur the background").
 * Every recognised subject is painted in; time, style, mood and weather words become grades.
 */
export function interpretEdit(prompt: string): EditMeaning {
  const scene = interpretPrompt(prompt);
  const grades: Grade[] = [];
  const push = (g: Grade): void => {
    if (!grades.includes(g)) grades.push(g);
  };
  switch (scene.time) {
    case 'dusk':
      push('sunset');
      break;
    case 'night':
      push('night');
      break;
    case 'dawn':
      push('dawn');
      break;
    case 'noon':
    case 'morning':
      push('day');
      break;
    default:
      break;
  }
  switch (scene.style) {
    case 'monochrome':
      push('bw');
      break;
    case 'sepia':
      push('sepia');
      break;
    case 'neon':
      push('neon');
      break;
    case 'pastel':
      push('pastel');
      break;
    case 'vivid':
      push('vivid');
      break;
    default:
      break;
  }
  for (const mood of scene.moods) {
    if (mood === 'warm') push('warmer');
    if (mood === 'cool') push('cooler');
    if (mood === 'bright') push('brighter');
    if (mood === 'dark') push('darker');
  }
  if (scene.weather.includes('fog')) push('fog');
  if (scene.weather.includes('storm')) push('storm');
  const snow = scene.weather.includes('snow') || scene.snowy;
  const rain = scene.weather.includes('rain') || scene.weather.includes('storm');
  // "sun"/"moon" in "make it sunny" are light, not objects to paint; keep them as subjects only when asked by name.
  const add = scene.subjects.filter((s) => s.kind !== 'city');
  return { grades, add, blurBackground: scene.blur, snow, rain, scene };
}
