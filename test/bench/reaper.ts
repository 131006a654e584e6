// Child process: a SIGKILLed orchestrator runs no exit handler, and the gateway (unlike the
// forked children) has no IPC channel to notice. This one has, and takes the gateway with it.
const pid = Number(process.argv[2]);
process.on('disconnect', () => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone: the normal case after stopAll().
  }
  process.exit(0);
});
// A gateway stopped on its own (a fresh one follows it, run.ts): nothing left to take, and its pid may be reused.
setInterval(() => {
  try {
    process.kill(pid, 0);
  } catch {
    process.exit(0);
  }
}, 500).unref();
process.send!({ url: '' });
