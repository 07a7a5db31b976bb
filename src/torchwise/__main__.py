import sys

from torchwise.cli import main

sys.exit(main())
