"""The ``quantcodec`` command's tools: the demo, the live view, the report, the bench, the scene
simulator, the link simulation and the worst-case search.

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
    quantcodec.tools.search      the seeded worst-case search that writes quantcodec/_maxerr.py
                                 (``python -m quantcodec.tools.search --write``)
    quantcodec.tools.examples    the PlayerState fixtures the tests, benches and fuzz targets share
"""
