"""Issue 33, cases 1 and 2, without Dagster: a landed delivery is read only when whole (unchanged across the
settle interval and while read), once; what is not a plain file inside the landing folder is refused unopened,
naming its path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mlassets.core.automation.landing import fingerprint, scan, stamp
from mlassets.core.automation.settle import decide, pending, resolve

pytestmark = pytest.mark.timeout(60)  # a FIFO opened for reading would block: the test fails, never hangs
ROWS = "".join(f"2024-01-{d:02d},shop{d},{d * 3}\n" for d in range(1, 29))


def _tick(folder: Path, cursor: dict, now: float, settle_s: float = 10):
    found, _ = scan(folder, "YYYY-MM")
    return decide(found, cursor, now, settle_s, lambda d: stamp(d.path, folder.resolve(), 1 << 30))


def test_a_file_still_being_written_waits_and_one_changed_after_its_ingest_is_no_new_version(tmp_path: Path) -> None:
    target, cursor = tmp_path / "2024-01.csv", {}
    whole = "date,shop,units\n" + ROWS
    target.write_text(whole[: int(len(whole) * 0.6)])  # cut at 60 %
    assert _tick(tmp_path, cursor, 100.0).ready == []
    assert _tick(tmp_path, cursor, 105.0).ready == []  # unchanged for 5 s of 10: still waiting
    with target.open("a") as fh:
        fh.write(whole[int(len(whole) * 0.6):])
    assert _tick(tmp_path, cursor, 112.0).ready == []  # it changed: the interval starts again
    (ready,) = _tick(tmp_path, cursor, 122.0).ready
    assert ready[0].key == "2024-01" and ready[1] == fingerprint(target)
    assert _tick(tmp_path, cursor, 200.0).ready == []  # once
    assert pending(cursor) == {"2024-01": ready[1]}
    resolve(cursor, "2024-01", ingested=True)  # its run ingested it
    assert _tick(tmp_path, cursor, 250.0).ready == []  # read again after the run: the same bytes, nothing to do
    target.write_text(whole.replace("shop3,9", "shop3,10"))
    os.utime(target, ns=(1, 1))
    assert _tick(tmp_path, cursor, 300.0).ready == []
    later = _tick(tmp_path, cursor, 311.0)
    assert later.ready == [] and [d.key for d in later.changed] == ["2024-01"]  # reported, not ingested
    assert _tick(tmp_path, cursor, 400.0).changed == []  # reported once


def test_a_refused_delivery_is_taken_again_only_once_it_changes_and_settles(tmp_path: Path) -> None:
    target, cursor = tmp_path / "2024-01.csv", {}
    whole = "date,shop,units\n" + ROWS
    target.write_text(whole[: int(len(whole) * 0.6)])  # a writer that stalls past the settle interval
    _tick(tmp_path, cursor, 100.0)
    (cut,) = _tick(tmp_path, cursor, 111.0).ready
    with target.open("a") as fh:  # the copy goes on while the run is pending
        fh.write(whole[int(len(whole) * 0.6):])
    os.utime(target, ns=(1, 1))
    _tick(tmp_path, cursor, 112.0)
    held = _tick(tmp_path, cursor, 123.0)
    assert held.ready == [] and held.changed == [] and [d.key for d in held.held] == ["2024-01"]  # not "ingested"
    resolve(cursor, "2024-01", ingested=False)  # its run refused the cut file
    (again,) = _tick(tmp_path, cursor, 124.0).ready  # whole and settled already: taken now
    assert again[1] == fingerprint(target) != cut[1]
    resolve(cursor, "2024-01", ingested=False)  # refused again (say, by a check)
    assert _tick(tmp_path, cursor, 130.0).ready == [] and _tick(tmp_path, cursor, 200.0).ready == []  # same bytes


def test_a_file_that_changes_while_it_is_read_is_not_ingested(tmp_path: Path) -> None:
    (tmp_path / "2024-01.csv").write_text("date,shop,units\n" + ROWS)
    cursor: dict = {}
    found, _ = scan(tmp_path, "YYYY-MM")
    decide(found, cursor, 0.0, 1, lambda d: d.stamp)
    moving = decide(found, cursor, 5.0, 1, lambda d: "another stamp")  # written to while hashed
    assert moving.ready == [] and [d.key for d in moving.waiting] == ["2024-01"]


def test_links_that_leave_the_folder_fifos_and_oversized_files_are_refused_unread(tmp_path: Path) -> None:
    landing, outside = tmp_path / "landing", tmp_path / "secret.csv"
    landing.mkdir()
    outside.write_text("user,password\nroot,hunter2\n")
    (landing / "2024-01.csv").symlink_to(outside)
    (landing / "2024-02.csv").symlink_to("/etc/passwd")
    os.mkfifo(landing / "2024-03.csv")
    (landing / "2024-04.csv").write_bytes(b"a,b\n" + b"1,2\n" * 300_000)  # 1.2 MB
    (landing / "2024-05").mkdir()
    (landing / "2024-05" / "part.csv").symlink_to(outside)  # a folder delivery holding a link out
    (landing / "2024-06.csv").write_text("date,shop,units\n" + ROWS)
    (landing / "2024-07.csv").symlink_to(landing / "2024-06.csv")  # a link that stays inside: read
    found, ignored = scan(landing, "YYYY-MM", max_mb=1)
    assert [d.key for d in found] == ["2024-06", "2024-07"]
    why = {i.name: i.reason for i in ignored}
    assert set(why) == {"2024-01.csv", "2024-02.csv", "2024-03.csv", "2024-04.csv", "2024-05"}
    for name in ("2024-01.csv", "2024-02.csv"):
        assert f"{landing / name} is a link that leaves the landing folder" in why[name]
    assert f"{landing / '2024-05' / 'part.csv'} is a link that leaves" in why["2024-05"]
    assert f"{landing / '2024-03.csv'} is a FIFO" in why["2024-03.csv"]
    assert "above automation.landing_max_mb (1 MB)" in why["2024-04.csv"]
    assert not any("hunter2" in r or "root:" in r for r in why.values())  # nothing of any content is quoted


def test_an_ingest_reads_only_the_content_the_sensor_found_whole(tmp_path: Path) -> None:
    """Issue 33: the ingest run re-checks the delivery before it reads (rewritten in place after the sensor's
    decision: refused) and while it reads (its stamp moved: refused); unchanged, it reads."""
    from mlassets.core.automation.landing import Refused, read_unchanged

    delivered = tmp_path / "2024-01.csv"
    delivered.write_text("a,b\n1,2\n")
    found = fingerprint(delivered)
    with read_unchanged(delivered, found, "2024-01"):
        assert delivered.read_text() == "a,b\n1,2\n"
    delivered.write_text("a,b\n1,3\n")  # rewritten in place after the sensor's decision
    with pytest.raises(Refused, match=r"changed after the landing sensor found it whole .*--partition 2024-01 --from"):
        with read_unchanged(delivered, found, "2024-01"):
            pytest.fail("a changed delivery was read")
    with pytest.raises(Refused, match="changed while it was read"):
        with read_unchanged(delivered):  # `mlassets ingest --from`: no sensor, still whole while read
            with delivered.open("a") as fh:
                fh.write("4,5\n")


def test_a_link_given_to_from_is_read_as_the_file_it_names(tmp_path: Path) -> None:
    """``mlassets ingest --from`` a link to a file elsewhere (the user's own choice) is read; the landing folder's
    rule against links that leave it is the sensor's."""
    from mlassets.core.automation.landing import read_unchanged

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "jan.csv").write_text("a\n1\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "2024-01.csv").symlink_to(tmp_path / "data" / "jan.csv")
    with read_unchanged(tmp_path / "in" / "2024-01.csv"):
        pass
