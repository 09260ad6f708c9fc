"""The ``quantcodec`` command's tools: the demo, the live view, the report, the bench, the scene
simulator and the link simulation. (The worst-case search that writes quantcodec/_maxerr.py runs
on the reference rules, which the package never imports: it is the repository's tools/search.py.)

They are not part of the library's API (``import quantcodec`` imports none of them; the command
imports each lazily when one of its subcommands runs) and may change between versions without
notice. The library is ``quantcodec`` itself: the codecs, ``Schema``, the snapshot coders, the
conformance kit and the code generator.

    quantcodec.tools.demo        ``quantcodec demo``: raw / quantized / delta over a lossy link
    quantcodec.tools.liveview    ``quantcodec demo --serve``: the demo streamed to a web page
    quantcodec.tools.report      ``quantcodec report``: per-field bit accounting over a trace
    quantcodec.tools.bench       ``quantcodec bench``: the microbenchmarks beside their baselines
    quantcodec.tools.scene       the deterministic rigid-body scene the demo and benches run
    quantcodec.tools.link        a recording streamed through a simulated lossy link
    quantcodec.tools.progress    the progress bar of demo and report (tqdm's, or plain lines)
    quantcodec.tools.examples    the PlayerState fixtures the tests, benches and fuzz targets share
"""
