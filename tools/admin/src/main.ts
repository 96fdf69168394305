import { adminMain } from './admin';

void adminMain(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr }).then((code) => {
  if (code !== 0) process.exit(code);
});
