// The C# half of Bench~/bench.py (never a timed test): decode time and allocation per packet.
//   mono bench.exe SCHEMA.json DATAGRAMS.bin NUMBER
// DATAGRAMS.bin: the stream up to the measured packet (hello, then every earlier tick's packet);
// its last datagram is the one timed. Prints one JSON line: the per-call time of decoding the
// last datagram again (a duplicate: decoded in full, then compared with the held snapshot, as
// Python's bench_snapshot times it), the bytes allocated per such call, and the bytes allocated
// per packet over the stream's last 30 first-time decodes.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using QuantCodec;

static class Bench
{
    static int Main(string[] args)
    {
        if (args.Length > 0 && args[0] == "--stream") return Stream(args);
        var schema = Schema.Load(args[0]);
        var all = Read(args[1]);
        int number = int.Parse(args[2]);
        var dec = new SnapshotDecoder(schema);
        long streamAlloc = 0;
        int streamN = 0;
        for (int i = 0; i < all.Count; i++)
        {
            long a0 = GC.GetAllocatedBytesForCurrentThread();
            var r = dec.Receive(all[i]);
            long a1 = GC.GetAllocatedBytesForCurrentThread();
            if (r == Received.Refused) { Console.Error.WriteLine("refused " + i + ": " + dec.LastError); return 1; }
            if (i >= all.Count - 30) { streamAlloc += a1 - a0; streamN++; }
        }
        var last = all[all.Count - 1];
        for (int i = 0; i < Math.Max(50, number / 4); i++) dec.Receive(last);      // JIT and caches
        var sw = new Stopwatch();
        long b0 = GC.GetAllocatedBytesForCurrentThread();
        sw.Start();
        for (int i = 0; i < number; i++) dec.Receive(last);
        sw.Stop();
        long b1 = GC.GetAllocatedBytesForCurrentThread();
        double us = sw.Elapsed.TotalMilliseconds * 1000.0 / number;
        // CPU time (less moved by other processes on a loaded machine): loops of at least 0.4 s
        int cpuN = Math.Max(number, (int)(400000.0 / Math.Max(us, 1.0)));
        var proc = Process.GetCurrentProcess();
        double cpuBest = double.MaxValue;
        for (int rep = 0; rep < 3; rep++)
        {
            proc.Refresh();
            var c0 = proc.TotalProcessorTime;
            for (int i = 0; i < cpuN; i++) dec.Receive(last);
            proc.Refresh();
            cpuBest = Math.Min(cpuBest, (proc.TotalProcessorTime - c0).TotalMilliseconds * 1000.0 / cpuN);
        }
        Console.WriteLine("{\"us\":" + us.ToString("R", System.Globalization.CultureInfo.InvariantCulture)
            + ",\"cpu_us\":" + cpuBest.ToString("R", System.Globalization.CultureInfo.InvariantCulture)
            + ",\"alloc_per_call\":" + ((b1 - b0) / (double)number).ToString("R", System.Globalization.CultureInfo.InvariantCulture)
            + ",\"alloc_per_packet_stream\":" + (streamAlloc / (double)streamN).ToString("R", System.Globalization.CultureInfo.InvariantCulture)
            + ",\"count\":" + dec.LastSnapshot.Count + "}");
        return 0;
    }

    /// <summary>mono bench.exe --stream SCHEMA.json DATAGRAMS.bin REPEATS: a whole stream (hello,
    /// packets, fragments) decoded REPEATS times, each time by a new SnapshotDecoder, after as many
    /// untimed passes (JIT); prints the time of each pass in seconds, the process CPU time a pass
    /// (over the timed passes together: the clock ticks are coarse) and the entities decoded.</summary>
    static int Stream(string[] args)
    {
        var schema = Schema.Load(args[1]);
        var all = Read(args[2]);
        int repeats = int.Parse(args[3]);
        var times = new List<string>();
        long entities = 0;
        var sw = new Stopwatch();
        var proc = Process.GetCurrentProcess();
        TimeSpan cpu0 = TimeSpan.Zero;
        long faults0 = -1;
        for (int r = -repeats; r < repeats; r++)
        {
            if (r == 0) { proc.Refresh(); cpu0 = proc.TotalProcessorTime; faults0 = MinorFaults(); }
            entities = 0;
            sw.Restart();
            var dec = new SnapshotDecoder(schema);
            for (int i = 0; i < all.Count; i++)
            {
                var x = dec.Receive(all[i]);
                if (x == Received.Snapshot) entities += dec.LastSnapshot.Count;
                else if (x == Received.Refused) { Console.Error.WriteLine("refused " + i + ": " + dec.LastError); return 1; }
            }
            // done with it, as a client that reconnects is: a library whose decoder is IDisposable
            // keeps its buffers for the next one (an earlier one built by --compare-with is not)
            var done = (object)dec as IDisposable;
            if (done != null && Environment.GetEnvironmentVariable("QC_BENCH_NO_DISPOSE") == null) done.Dispose();
            sw.Stop();
            if (r >= 0) times.Add(sw.Elapsed.TotalSeconds.ToString("R", System.Globalization.CultureInfo.InvariantCulture));
        }
        proc.Refresh();
        double cpu = (proc.TotalProcessorTime - cpu0).TotalSeconds / repeats;
        long faults1 = MinorFaults();
        double faults = faults0 >= 0 && faults1 >= 0 ? (faults1 - faults0) / (double)repeats : -1;
        Console.WriteLine("{\"seconds\":[" + string.Join(",", times) + "],\"cpu_seconds\":"
            + cpu.ToString("R", System.Globalization.CultureInfo.InvariantCulture) + ",\"minor_faults\":"
            + faults.ToString("R", System.Globalization.CultureInfo.InvariantCulture) + ",\"entities\":" + entities + "}");
        return 0;
    }

    /// <summary>The process's minor page faults so far (Linux: field 10 of /proc/self/stat), or -1.</summary>
    static long MinorFaults()
    {
        try
        {
            string st = File.ReadAllText("/proc/self/stat");
            string[] f = st.Substring(st.LastIndexOf(')') + 2).Split(' ');     // from field 3, the state
            return long.Parse(f[7]);
        }
        catch (Exception) { return -1; }
    }

    static List<byte[]> Read(string path)
    {
        var data = File.ReadAllBytes(path);
        var o = new List<byte[]>();
        int pos = 0;
        while (pos < data.Length)
        {
            int n = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16 | data[pos + 3] << 24;
            var d = new byte[n];
            Buffer.BlockCopy(data, pos + 4, d, 0, n);
            o.Add(d);
            pos += 4 + n;
        }
        return o;
    }
}
