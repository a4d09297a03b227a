"""``python -m contextengine`` runs the command line."""

from contextengine.cli import main

if __name__ == "__main__":
    main()
