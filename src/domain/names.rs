//! Friendly two-word names for sessions ("Swift Spark", "Calm Nexus").

const ADJECTIVES: [&str; 32] = [
    "Swift", "Calm", "Bright", "Bold", "Quiet", "Clever", "Brave", "Gentle", "Lucky", "Nimble", "Steady", "Vivid",
    "Witty", "Keen", "Eager", "Mellow", "Sunny", "Rapid", "Silent", "Golden", "Crisp", "Noble", "Lively", "Patient",
    "Curious", "Cosmic", "Amber", "Misty", "Polar", "Velvet", "Hidden", "Daring",
];
const NOUNS: [&str; 32] = [
    "Spark", "Nexus", "Falcon", "River", "Comet", "Harbor", "Maple", "Orbit", "Pixel", "Summit", "Willow", "Beacon",
    "Cedar", "Delta", "Ember", "Fjord", "Grove", "Horizon", "Island", "Jasper", "Lagoon", "Meadow", "Nova", "Otter",
    "Prism", "Quartz", "Raven", "Signal", "Tundra", "Vertex", "Zephyr", "Atlas",
];

/// A random adjective-noun pair.
pub fn friendly() -> String {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    format!("{} {}", ADJECTIVES[bytes[0] as usize % ADJECTIVES.len()], NOUNS[bytes[1] as usize % NOUNS.len()])
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_capitalised_words() {
        for _ in 0..50 {
            let name = super::friendly();
            let words: Vec<&str> = name.split(' ').collect();
            assert_eq!(words.len(), 2, "{name}");
            assert!(words.iter().all(|w| w.chars().next().is_some_and(char::is_uppercase)));
        }
    }
}
