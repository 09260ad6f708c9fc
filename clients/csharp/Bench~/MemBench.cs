// Real memory against wire-format section 19's model (never a timed test; the numbers go in
// README.md, Limits): GC.GetTotalMemory(true) before a StreamClient and after it has taken a
// stream, against decoder.HeldBytes (the model's cost of the snapshots held).
//   mcs -r:build~/QuantCodec.dll -out:build~/membench.exe Bench~/MemBench.cs
//   mono build~/membench.exe ../../conformance/schemas/one_bit.json STREAM.bin
// STREAM.bin: a stream of T ticks of E entities at history H (the window holds min(T, 2H - 1)),
// written with the Python package, e.g. T=20000 E=1 H=30000:
//   python -c "import sys, numpy as np, quantcodec as qc; from quantcodec.conformance import write_datagrams
//   T, E, H = map(int, sys.argv[1:4]); s = qc.Schema.from_json(open('conformance/schemas/one_bit.json').read())
//   enc = qc.SnapshotEncoder(s, H, max_datagram=1200); r = np.random.default_rng(1); ds = [enc.hello()]
//   for t in range(T): ds += enc.encode_datagrams(t & 0xFFFF, s.snapshot(np.arange(E), {'on': r.random(E) < 0.5})); enc.ack(t & 0xFFFF)
//   write_datagrams(sys.argv[4], ds)" 20000 1 30000 STREAM.bin
// Run one stream a process (a client measured before stays reachable in the next measure).
using System;
using System.Collections.Generic;
using System.IO;
using QuantCodec;

static class MemBench
{
    static List<byte[]> Read(string path)
    {
        var d = File.ReadAllBytes(path);
        var o = new List<byte[]>();
        for (int pos = 0; pos < d.Length;)
        {
            int n = d[pos] | d[pos + 1] << 8 | d[pos + 2] << 16 | d[pos + 3] << 24;
            var b = new byte[n];
            Buffer.BlockCopy(d, pos + 4, b, 0, n);
            o.Add(b);
            pos += 4 + n;
        }
        return o;
    }

    static int Main(string[] args)
    {
        var schema = Schema.Load(args[0]);
        var ds = Read(args[1]);
        long m0 = GC.GetTotalMemory(true);
        var c = new StreamClient(schema, nonce: 1);
        int views = 0;
        foreach (var d in ds) { try { if (c.Receive(d) != null) views++; } catch (DecodeException) { } }
        long m1 = GC.GetTotalMemory(true);
        long model = c.Decoder.HeldBytes;
        int window = Math.Min(views, 2 * c.Decoder.History - 1);
        Console.WriteLine("{0}: {1} views, window {2} snapshots, S={3}; model (HeldBytes) {4} B, measured {5} B: {6:F2} times; {7:F0} B a snapshot against {8:F0}",
            Path.GetFileName(args[1]), views, window, schema.Slots.Length, model, m1 - m0, (double)(m1 - m0) / model,
            (double)(m1 - m0) / window, (double)model / window);
        GC.KeepAlive(c);
        GC.KeepAlive(ds);
        return 0;
    }
}
