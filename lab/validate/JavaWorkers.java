// SPDX-License-Identifier: MIT
// An OpenJDK program with several worker threads, for lab/validate/run.sh.
//
// A fixed pool of THREADS workers runs TASKS tasks; each builds a HashMap
// of 20000 strings to boxed longs and a list of int arrays, sums them and
// drops them, so the threads allocate in their TLABs, the collector runs,
// and the JIT compiles the loop.  The main thread waits on the futures.
//
//   java JavaWorkers [THREADS] [TASKS]        (default 4 400)
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public class JavaWorkers {
    static long task(int seed) {
        HashMap<String, Long> map = new HashMap<>();
        List<int[]> arrays = new ArrayList<>();
        long x = seed;
        for (int i = 0; i < 20000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            map.put(Long.toHexString(x), x >>> 20);
            if ((i & 255) == 0)
                arrays.add(new int[1024 + (int) ((x >>> 40) & 4095)]);
        }
        long sum = 0;
        for (long v : map.values())
            sum += v & 0xffff;
        for (int[] a : arrays)
            sum += a.length;
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int tasks = args.length > 1 ? Integer.parseInt(args[1]) : 400;
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Long>> fs = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            final int seed = i + 1;
            fs.add(pool.submit(() -> task(seed)));
        }
        long sum = 0;
        for (Future<Long> f : fs)
            sum += f.get();
        pool.shutdown();
        System.out.printf("threads=%d tasks=%d seconds=%.3f checksum=%d%n", threads, tasks,
                          (System.nanoTime() - t0) / 1e9, sum);
    }
}
