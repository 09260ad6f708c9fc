// The cost of a datagram's check (never a timed test; the numbers go in reports and README.md):
// SipHash-2-4 (the keyed tag, wire-format section 17) against CRC-32C, on a 1,200-byte datagram
// (a full one at the default max_datagram) and a 20-byte reply (an ack with its tag).
//   mcs -optimize+ -r:build~/QuantCodec.dll -out:build~/checkbench.exe Bench~/CheckBench.cs
//   mono build~/checkbench.exe [REPEATS] [NUMBER]
// Prints, per size, the median over REPEATS runs of NUMBER calls of the time per call.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using QuantCodec;

static class CheckBench
{
    static int Main(string[] args)
    {
        int repeats = args.Length > 0 ? int.Parse(args[0]) : 21;
        int number = args.Length > 1 ? int.Parse(args[1]) : 20000;
        var key = new TagKey(0x0706050403020100UL, 0x0f0e0d0c0b0a0908UL);
        foreach (int size in new[] { 1200, 20 })
        {
            var d = new byte[size];
            for (int i = 0; i < size; i++) d[i] = (byte)(i * 31 + 7);
            ulong sink = 0;
            for (int i = 0; i < 1000; i++) sink += key.Tag(d, 0, size - 8) + Crc32C.Compute(d, 0, size - 4, 1);   // warm up (JIT)
            var sip = new List<double>();
            var crc = new List<double>();
            for (int r = 0; r < repeats; r++)
            {
                var sw = Stopwatch.StartNew();
                for (int i = 0; i < number; i++) sink += key.Tag(d, 0, size - 8);
                sip.Add(sw.Elapsed.TotalMilliseconds * 1e6 / number);
                sw.Restart();
                for (int i = 0; i < number; i++) sink += Crc32C.Compute(d, 0, size - 4, 1);
                crc.Add(sw.Elapsed.TotalMilliseconds * 1e6 / number);
            }
            sip.Sort(); crc.Sort();
            Console.WriteLine(string.Format(System.Globalization.CultureInfo.InvariantCulture,
                "{{\"datagram_bytes\":{0},\"siphash_ns\":{1:F0},\"crc32c_ns\":{2:F0},\"repeats\":{3},\"number\":{4},\"sink\":{5}}}",
                size, sip[repeats / 2], crc[repeats / 2], repeats, number, sink & 1));
        }
        return 0;
    }
}
