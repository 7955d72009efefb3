import { randomBytes } from "node:crypto"
import * as os from "node:os"
import { RunnerAddress } from "@effect/cluster"

/**
 * This process as a job runner: the host name tells machines apart and the pid processes on one,
 * and a random prefix tells apart processes that share both (containers all run as pid 1, and a
 * long host name loses its end when the store session's name is cut to 63 bytes).
 */
export const RUNNER_ADDRESS = RunnerAddress.make(`${randomBytes(3).toString("hex")}.${os.hostname()}`, process.pid)

/** This process as operators read it on a job's records (which runner did a step, holds a lease, started a run). */
export const RUNNER_LABEL = `${RUNNER_ADDRESS.host}:${RUNNER_ADDRESS.port}`

/**
 * The application_name of a runner's store sessions (at most 63 bytes, as PostgreSQL keeps it). They
 * end when its process dies, the kernel closing its sockets, so other runners tell a dead runner from
 * a slow one at once instead of waiting out its shard locks.
 */
export const storeSessionName = (address: RunnerAddress.RunnerAddress) => `sluice ${address.port}@${address.host}`.slice(0, 63)
