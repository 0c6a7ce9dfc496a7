"""docs/python-api.md's generated part (what the package has, per namespace) is current: the
test regenerates it from the package under test (python/api_coverage.py) and fails once when
it changed, asking to commit the page."""
import os
import sys

import ringgrad as rg

HERE = os.path.dirname(os.path.abspath(__file__))


def test_the_api_coverage_page_is_current():
    sys.path.insert(0, os.path.dirname(HERE))
    from api_coverage import PAGE, write_page
    changed = write_page(os.path.realpath(rg._C.__file__))
    assert not changed, "docs/python-api.md was stale and has been regenerated: commit it"
    text = open(PAGE).read()
    assert "`exp`" in text and "`CrossEntropyLoss`" in text and "`Adam`" in text
