declare module "autocannon" {
  interface Histogram {
    readonly average: number
    readonly p50: number
    readonly p99: number
    readonly mean: number
  }
  interface Result {
    readonly requests: Histogram & { readonly total: number }
    readonly latency: Histogram
    readonly non2xx: number
    readonly errors: number
    readonly duration: number
  }
  interface Options {
    readonly url: string
    readonly connections?: number
    readonly duration?: number
    readonly headers?: Record<string, string>
    readonly pipelining?: number
  }
  export default function autocannon(options: Options): Promise<Result>
}
