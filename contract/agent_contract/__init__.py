"""The agent contract: both seed contracts, pydantic and the standard library only."""
