"""save_gif writes every frame, in order, as a looping GIF; bad input is a named error."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from vlagent.viz import save_gif


def test_gif_has_every_frame_in_order(tmp_path) -> None:
    frames = [np.full((8, 8, 3), v, dtype=np.uint8) for v in (0, 120, 250)]
    path = save_gif(frames, tmp_path / "ep.gif")
    with Image.open(path) as im:
        assert im.n_frames == 3
        seen = []
        for i in range(3):
            im.seek(i)
            seen.append(int(np.asarray(im.convert("L"))[0, 0]))
    assert seen[0] < seen[1] < seen[2]
    assert not list(tmp_path.glob("*.tmp*"))


def test_gif_rejects_empty_and_mixed_shapes(tmp_path) -> None:
    with pytest.raises(ValueError, match="no frames"):
        save_gif([], tmp_path / "a.gif")
    with pytest.raises(ValueError, match="differ in shape"):
        save_gif([np.zeros((8, 8, 3), np.uint8), np.zeros((4, 8, 3), np.uint8)], tmp_path / "b.gif")
