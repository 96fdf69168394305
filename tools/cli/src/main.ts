import { parseCommandLine, PROGRAM } from './cli';
import { Listener } from './listener';
import { streamOutput } from './output';

// The installed command (bin/media-callbacks.js loads this file): the command line, then signals.
const command = parseCommandLine(process.argv.slice(2), process.env);
switch (command.kind) {
  case 'help':
    process.stdout.write(command.text);
    break;
  case 'usage-error':
    process.stderr.write(`${PROGRAM}: ${command.message}\n\n${command.usage}`);
    process.exitCode = 2;
    break;
  case 'listen': {
    // A reader that went away (`| head`) ends the lines, not the forwarding.
    process.stdout.on('error', () => undefined);
    process.stderr.on('error', () => undefined);
    const listener = new Listener(command.settings, { output: streamOutput(process.stdout, process.stderr) });
    let signalled = false;
    const stop = () => {
      // A second Ctrl-C does not wait for the gateway's close frame.
      if (signalled) process.exit(0);
      signalled = true;
      void listener.stop();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // Forwards still in flight are of no use once the connection is gone: exit without them.
    void listener.run().then((code) => process.exit(code));
    break;
  }
}
