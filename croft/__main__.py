"""``python -m croft``."""

from croft.cli.main import main

if __name__ == "__main__":
    main()
