// The package's API besides its command: the listener and its parts, for tools that embed it.
export { LISTEN_HELP, OVERVIEW_HELP, parseCommandLine, type Command } from './cli';
export { Forwarder, EXCERPT_BYTES, type ForwarderOptions } from './forwarder';
export { DEFAULT_TUNING, Listener, type ListenerDeps, type ListenerTuning, type WebSocketFactory } from './listener';
export { streamOutput, systemClock, type Clock, type Output } from './output';
export * from './protocol';
export { bypassesProxy, proxyFor, type ProxySettings } from './proxy';
export { EVENT_TYPES, listenSettings, relayListenUrl, UsageError, type EventType, type ListenSettings } from './settings';
