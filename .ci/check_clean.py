"""`make lint`'s notebook check: the notebooks are what nbdev_clean makes of them (it cleans them, and fails if that changed any).
That the library is what `make export` makes of the notebooks is tests/test_pipeline.py's."""
import subprocess, sys
from pathlib import Path
from nbdev.config import get_config

def snapshot(paths) -> dict[Path, str]: return {p: p.read_text(encoding='utf-8') for p in paths}

def check_clean() -> int:
    nbs = sorted(get_config().nbs_path.glob('*.ipynb'))
    before = snapshot(nbs)
    subprocess.run([str(Path(sys.executable).parent/'nbdev_clean')], check=True)
    changed = [str(p) for p, text in snapshot(nbs).items() if text != before[p]]
    if changed:
        print('notebooks nbdev_clean changes (now cleaned; commit them):', *changed, sep='\n  ')
        return 1
    print(f'{len(nbs)} notebooks clean')
    return 0

if __name__ == '__main__':
    sys.exit(check_clean())
