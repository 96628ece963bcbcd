"""Code fingerprints move with what an asset computes (code, lib/, packages, zone), not with comments."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from croft.project.config import load_project
from croft.project.discovery import discover
from croft.project.fingerprint import code_hash, file_key, import_closure

INGEST = '''
"""Orders from the shop API."""
from croft import ingest
from lib.shop import BASE


@ingest(schedule="every hour", key="id", description="orders")
def rows(ctx):
    # fetch everything
    yield {"id": 1, "base": BASE}
'''
INGEST_RESTYLED = '''
"""Orders, as the shop API returns them (docstrings do not count)."""
from croft import ingest
from lib.shop import BASE   # shared base URL

@ingest(
    schedule = "every hour",
    key = "id",
    description = "a different description",
)
def fetch_orders( ctx ):
    yield {
        "id": 1,
        "base": BASE,
    }
'''
LIB_SHOP = """
from lib import urls

BASE = urls.root() + "/shop"
"""
LIB_URLS = """
def root():
    return "https://api.example.com"
"""
SQL = """
-- description: orders per day
-- key: day
-- check: n >= 0
SELECT day, count(*) AS n FROM orders WHERE status = 'Paid' GROUP BY day
"""
SQL_RESTYLED = """
-- description: something else entirely
-- key: day
-- check: n >= 0
select day,
       COUNT( * ) as n   -- how many
  from ORDERS
 where status = 'Paid'
 group by day;
/* trailing note */
"""


def hashes(root: Path) -> dict[str, str]:
    project = load_project(root)
    assets, problems = discover(project)
    assert problems == []
    return {name: code_hash(project, facts) for name, facts in assets.items()}


def keys(root: Path) -> dict[str, str]:
    project = load_project(root)
    assets, _ = discover(project)
    return {name: file_key(project, facts) for name, facts in assets.items()}


@pytest.fixture
def shop(make_project):
    return make_project(
        {
            "assets/orders.py": INGEST,
            "assets/daily.sql": SQL,
            "lib/__init__.py": "",
            "lib/shop.py": LIB_SHOP,
            "lib/urls.py": LIB_URLS,
        }
    )


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(text)


def test_python_hash_ignores_comments_layout_docstrings_description_and_function_name(shop):
    before = hashes(shop)["orders"]
    write(shop, "assets/orders.py", INGEST_RESTYLED)
    assert hashes(shop)["orders"] == before


def test_python_hash_changes_with_the_code(shop):
    before = hashes(shop)["orders"]
    write(shop, "assets/orders.py", INGEST.replace('"id": 1', '"id": 2'))
    assert hashes(shop)["orders"] != before


def test_python_hash_changes_with_a_setting(shop):
    before = hashes(shop)["orders"]
    write(shop, "assets/orders.py", INGEST.replace('key="id"', 'key="order_id"'))
    assert hashes(shop)["orders"] != before


def test_a_renamed_asset_keeps_its_hash(shop):
    before = hashes(shop)["orders"]
    (shop / "assets/orders.py").rename(shop / "assets/shop_orders.py")
    assert hashes(shop)["shop_orders"] == before


def test_a_lib_edit_changes_the_hash_even_two_imports_away(shop):
    before = hashes(shop)
    write(shop, "lib/urls.py", LIB_URLS.replace("api.example.com", "api2.example.com"))
    after = hashes(shop)
    assert after["orders"] != before["orders"]
    assert after["daily"] == before["daily"]


def test_a_lib_comment_edit_does_not_change_the_hash(shop):
    before = hashes(shop)["orders"]
    write(shop, "lib/urls.py", "# helpers for URLs\n" + LIB_URLS.replace("return", "return  ") + "\n\n")
    assert hashes(shop)["orders"] == before


def test_import_closure_follows_every_import_form(make_project):
    root = make_project(
        {
            "assets/a.py": "import lib.one\nfrom lib import two\nfrom lib.pkg.three import x\n"
            "import httpx, os\nfrom croft import ingest\n",
            "lib/one.py": "from . import four\n",
            "lib/two.py": "",
            "lib/pkg/__init__.py": "",
            "lib/pkg/three.py": "from ..five import y\nimport click\nx = 1\n",
            "lib/four.py": "",
            "lib/five.py": "y = 2\n",
            "lib/unused.py": "",
        }
    )
    closure = import_closure(root, root / "assets/a.py")
    rels = [p.relative_to(root.resolve()).as_posix() for p in closure.local]
    assert rels == ["lib/five.py", "lib/four.py", "lib/one.py", "lib/pkg/__init__.py", "lib/pkg/three.py",
                    "lib/two.py"]  # fmt: skip
    assert closure.external == ("click", "httpx")


def fake_distribution(site: Path, version: str) -> None:
    """A real (tiny) installed distribution on disk, found by importlib.metadata like any other."""
    (site / "croftfakepkg").mkdir(parents=True)
    (site / "croftfakepkg" / "__init__.py").write_text("")
    info = site / f"croftfakepkg-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: croftfakepkg\nVersion: {version}\n")
    (info / "top_level.txt").write_text("croftfakepkg\n")


def test_an_upgraded_package_changes_the_hash(make_project, tmp_path, monkeypatch):
    root = make_project(
        {"assets/a.py": "import croftfakepkg\nfrom croft import ingest\n@ingest()\ndef rows(c): ..."}
    )
    old_site, new_site = tmp_path / "site-1", tmp_path / "site-2"
    fake_distribution(old_site, "1.0")
    fake_distribution(new_site, "2.0")
    rest = list(sys.path)
    monkeypatch.setattr(sys, "path", [str(old_site), *rest])
    with_old = hashes(root)["a"]
    assert hashes(root)["a"] == with_old
    monkeypatch.setattr(sys, "path", [str(new_site), *rest])
    assert hashes(root)["a"] != with_old


def test_croft_and_the_standard_library_are_not_packages_that_count(make_project, monkeypatch):
    root = make_project(
        {"assets/a.py": "import json, os.path\nimport croft\n@croft.ingest()\ndef rows(c): ..."}
    )
    assert import_closure(root, root / "assets/a.py").external == ()


def test_a_zone_change_changes_every_hash(shop):
    before = hashes(shop)
    config = json.loads((shop / "croft.json").read_text())
    config["timezone"] = "America/New_York"
    write(shop, "croft.json", json.dumps(config))
    after = hashes(shop)
    assert after["orders"] != before["orders"] and after["daily"] != before["daily"]


def test_rehashing_in_the_old_zone_tells_a_zone_change_from_an_edit(shop):
    before = hashes(shop)["daily"]
    write(shop, "croft.json", json.dumps({"timezone": "Asia/Tokyo"}))
    project = load_project(shop)
    assets, _ = discover(project)
    assert code_hash(project, assets["daily"], zone="Europe/London") == before


def test_sql_hash_ignores_comments_layout_keyword_case_and_description(shop):
    before = hashes(shop)["daily"]
    write(shop, "assets/daily.sql", SQL_RESTYLED)
    assert hashes(shop)["daily"] == before


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("'Paid'", "'paid'", id="string-literal-case"),
        pytest.param("-- key: day", "-- key: day, n", id="key"),
        pytest.param("-- check: n >= 0", "-- check: n > 0", id="check"),
        pytest.param("GROUP BY day", "GROUP BY day ORDER BY n", id="body"),
    ],
)
def test_sql_hash_changes_with_what_counts(shop, old, new):
    before = hashes(shop)["daily"]
    write(shop, "assets/daily.sql", SQL.replace(old, new))
    assert hashes(shop)["daily"] != before


def test_file_key_is_stable_when_nothing_changed(shop):
    assert keys(shop) == keys(shop)


def test_file_key_changes_with_asset_bytes_even_a_comment(shop):
    before = keys(shop)
    write(shop, "assets/orders.py", INGEST + "# note\n")
    write(shop, "assets/daily.sql", SQL + "-- note\n")
    after = keys(shop)
    assert after["orders"] != before["orders"] and after["daily"] != before["daily"]


def test_file_key_changes_when_an_imported_lib_file_is_touched(shop):
    before = keys(shop)
    stat = (shop / "lib/urls.py").stat()
    os.utime(shop / "lib/urls.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = keys(shop)
    assert after["orders"] != before["orders"]
    assert after["daily"] == before["daily"]


def test_file_key_changes_with_the_zone(shop):
    before = keys(shop)
    write(shop, "croft.json", json.dumps({"timezone": "UTC"}))
    assert keys(shop)["orders"] != before["orders"]
