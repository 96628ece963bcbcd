"""``python -m croft``."""

from croft.cli import main

if __name__ == "__main__":
    main()
