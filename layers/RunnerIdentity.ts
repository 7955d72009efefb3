import * as os from "node:os"
import { RunnerAddress } from "@effect/cluster"

/** This process as a job runner: unique per live process on a host; the host name tells machines apart. */
export const RUNNER_ADDRESS = RunnerAddress.make(os.hostname(), process.pid)

/**
 * The application_name of a runner's store sessions (at most 63 bytes, as PostgreSQL keeps it). They
 * end when its process dies, the kernel closing its sockets, so other runners tell a dead runner from
 * a slow one at once instead of waiting out its shard locks.
 */
export const storeSessionName = (address: RunnerAddress.RunnerAddress) => `sluice ${address.port}@${address.host}`.slice(0, 63)
