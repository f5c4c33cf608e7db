"""Third-party files the report ships, unchanged, each with where it came from.

plotly-cartesian.min.js: plotly.js's own cartesian bundle (the trace types bar, box, contour,
heatmap, histogram, histogram2d, histogram2dcontour, image, pie, scatter, scatterternary and
violin), from the npm package plotly.js-cartesian-dist-min 4.1.1,
https://registry.npmjs.org/plotly.js-cartesian-dist-min/-/plotly.js-cartesian-dist-min-4.1.1.tgz
(integrity sha512-o8GrFeusncwBIxbBynRJpY4pkgVB6caM+JLpwrLYbbsO7dZ8FJ+SVN2Fr+L7kiG/Z6w4P5O0Jus/Qr5EefHVeg==,
the file's sha256 79542150855a52c567260e3137095dbe2b744e6d702a5cabe67da246942fba7a), MIT
licensed (LICENSE.plotly-js, from the same package). The report's figures draw only scatter,
bar, box and heatmap traces; the full plotly.js that plotly.py carries is 4.8 MB, this 1.5 MB:
a report folder is a third of the size and every page parses a third of the script.
"""

from pathlib import Path

PLOTLY_JS_VERSION = "4.1.1"
PLOTLY_CARTESIAN = Path(__file__).with_name("plotly-cartesian.min.js")
